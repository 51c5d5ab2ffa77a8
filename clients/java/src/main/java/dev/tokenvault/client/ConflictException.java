package dev.tokenvault.client;

/**
 * 409: the credential's state does not allow it: {@code token_expired}, {@code min_ttl_unreachable},
 * {@code needs_reauth}, {@code revoke_pending}, {@code not_refreshable}, {@code conflict},
 * {@code authorization_expired}, {@code authorization_mismatch}.
 */
public class ConflictException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 409;

    public ConflictException(Problem problem) {
        super(problem);
    }
}
