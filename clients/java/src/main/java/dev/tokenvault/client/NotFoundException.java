package dev.tokenvault.client;

/**
 * 404: {@code credential_not_found}, {@code not_found} (no such route),
 * {@code authorization_unknown} (a sign-in's state that was never issued or is spent).
 */
public class NotFoundException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 404;

    public NotFoundException(Problem problem) {
        super(problem);
    }
}
