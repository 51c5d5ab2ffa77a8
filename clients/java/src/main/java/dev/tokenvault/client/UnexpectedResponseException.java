package dev.tokenvault.client;

/**
 * An answer that is not what the API promises: a body that is not JSON, a document without a
 * member the API requires, a stream line that does not parse (a daemon of another version, or
 * something else listening on the socket).
 */
public class UnexpectedResponseException extends TokenVaultException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final String detail;

    public UnexpectedResponseException(int status, String detail) {
        super("unexpected answer (" + status + "): " + detail, null);
        this.status = status;
        this.detail = detail;
    }

    /** The answer's HTTP status. */
    public int status() {
        return status;
    }

    public String detail() {
        return detail;
    }
}
