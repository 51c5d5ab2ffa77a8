package dev.tokenvault.client;

/**
 * 405: {@code method_not_allowed}.
 */
public class MethodNotAllowedException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 405;

    public MethodNotAllowedException(Problem problem) {
        super(problem);
    }
}
