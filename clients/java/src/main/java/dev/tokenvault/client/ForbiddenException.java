package dev.tokenvault.client;

/**
 * 403: {@code forbidden}; {@link #permission()} names what the caller lacks (the daemon
 * decides by the caller's uid and groups).
 */
public class ForbiddenException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 403;

    public ForbiddenException(Problem problem) {
        super(problem);
    }
}
