package dev.tokenvault.client;

/**
 * 502: the provider or upstream failed ({@code provider_unavailable}, {@code upstream_unavailable},
 * {@code upstream_too_large}).
 */
public class BadGatewayException extends ProblemException {
    private static final long serialVersionUID = 1L;

    /** The HTTP status this class stands for. */
    public static final int STATUS = 502;

    public BadGatewayException(Problem problem) {
        super(problem);
    }
}
