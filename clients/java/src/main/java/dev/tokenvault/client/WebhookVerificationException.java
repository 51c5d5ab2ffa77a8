package dev.tokenvault.client;

/**
 * A webhook delivery that is not authentic, or too old or too new to be trusted: answer it with
 * an error status and do not act on it. Checked, unlike the client's other exceptions: a receiver
 * that forgot to handle it would be a receiver that trusts forged deliveries.
 */
public class WebhookVerificationException extends Exception {
    private static final long serialVersionUID = 1L;

    public WebhookVerificationException(String message) {
        super(message);
    }
}
