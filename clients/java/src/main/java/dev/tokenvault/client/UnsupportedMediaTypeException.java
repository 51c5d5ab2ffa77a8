package dev.tokenvault.client;

/**
 * 415: {@code unsupported_media_type}.
 */
public class UnsupportedMediaTypeException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 415;

    public UnsupportedMediaTypeException(Problem problem) {
        super(problem);
    }
}
