package dev.tokenvault.client;

/**
 * Anything this client throws about the daemon or its answers: a problem the daemon answered
 * ({@link ProblemException} and its subclasses), a socket that cannot be reached
 * ({@link ConnectionFailedException}), or an answer that is not what the API promises
 * ({@link UnexpectedResponseException}). Unchecked, like the other clients' errors: a caller
 * handles the codes it cares about and lets the rest travel. A bad argument (an id without a
 * namespace, a header with a line break) is an {@link IllegalArgumentException} instead, thrown
 * before anything is sent.
 */
public class TokenVaultException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    protected TokenVaultException(String message, Throwable cause) {
        super(message, cause);
    }
}
