package dev.tokenvault.client;

/**
 * 422: the provider or the request's content was refused ({@code unknown_provider},
 * {@code provider_rejected}, {@code nonce_mismatch}, {@code upstream_not_allowed}, …).
 */
public class UnprocessableException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 422;

    public UnprocessableException(Problem problem) {
        super(problem);
    }
}
