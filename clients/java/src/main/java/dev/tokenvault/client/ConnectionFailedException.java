package dev.tokenvault.client;

import java.io.IOException;

/**
 * The daemon's socket could not be reached, or the connection broke (or timed out) before the
 * answer was whole. Nothing says whether the daemon acted on the request.
 */
public class ConnectionFailedException extends TokenVaultException {
    private static final long serialVersionUID = 1L;

    private final String socketPath;

    public ConnectionFailedException(String socketPath, IOException cause) {
        super("cannot talk to the daemon on " + socketPath + ": " + why(cause), cause);
        this.socketPath = socketPath;
    }

    /** The cause's message, or its class's name when it has none (a closed channel's has none). */
    private static String why(IOException cause) {
        if (cause == null) {
            return "no cause given";
        }
        String message = cause.getMessage();
        return message != null && !message.isEmpty() ? message : cause.getClass().getSimpleName();
    }

    /** The socket the client dialled. */
    public String socketPath() {
        return socketPath;
    }
}
