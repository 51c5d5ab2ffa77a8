package dev.tokenvault.client;

/**
 * 500: the daemon failed ({@code internal_error}, {@code integrity_error}, {@code storage_error}, …).
 */
public class InternalErrorException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 500;

    public InternalErrorException(Problem problem) {
        super(problem);
    }
}
