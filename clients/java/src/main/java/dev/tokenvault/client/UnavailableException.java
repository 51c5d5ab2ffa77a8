package dev.tokenvault.client;

/**
 * 503: try again later ({@code storage_unavailable}, {@code commit_pending},
 * {@code engine_unavailable}, {@code too_many_connections}, {@code clock_skew}).
 */
public class UnavailableException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 503;

    public UnavailableException(Problem problem) {
        super(problem);
    }
}
