package dev.tokenvault.client;

/**
 * 504: {@code upstream_timeout}.
 */
public class GatewayTimeoutException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 504;

    public GatewayTimeoutException(Problem problem) {
        super(problem);
    }
}
