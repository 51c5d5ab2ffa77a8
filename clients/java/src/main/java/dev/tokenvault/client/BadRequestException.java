package dev.tokenvault.client;

/**
 * 400: {@code invalid_field} (see {@link #field()}), {@code invalid_payload}, {@code invalid_credential_id},
 * {@code invalid_request}, {@code invalid_callback}.
 */
public class BadRequestException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 400;

    public BadRequestException(Problem problem) {
        super(problem);
    }
}
