package dev.tokenvault.client;

/**
 * A redeemed code ({@link TokenVaultClient#exchange}): the stored credential, its access token
 * (never shown by {@code toString}), and whether the credential was created.
 */
public record Exchanged(Credential credential, Token token, boolean created) {
    static Exchanged from(Document document, boolean created) {
        return new Exchanged(Credential.from(document.document("credential")),
                Token.from(document.document("token")), created);
    }
}
