package dev.tokenvault.client;

/**
 * 429: {@code rate_limited}, {@code too_many_streams}, {@code too_many_proxy_calls},
 * {@code too_many_authorizations}.
 */
public class TooManyRequestsException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 429;

    public TooManyRequestsException(Problem problem) {
        super(problem);
    }
}
