package dev.tokenvault.client;

/**
 * 413: {@code payload_too_large}.
 */
public class PayloadTooLargeException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 413;

    public PayloadTooLargeException(Problem problem) {
        super(problem);
    }
}
