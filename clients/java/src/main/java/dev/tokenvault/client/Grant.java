package dev.tokenvault.client;

import java.util.List;

/**
 * How the vault obtains a credential's tokens itself and renews them before they expire
 * ({@link Credential#grant()}): a client credentials grant of its provider instance, or an RFC 8693
 * token exchange of another credential's access token. Never a secret: the client's secret is the
 * instance's, and the subject is only named.
 *
 * @param type {@code client_credentials} or {@code token_exchange}; a newer daemon may add more
 * @param scopes the scopes asked for (unmodifiable, never {@code null})
 * @param audiences RFC 8693 {@code audience} values asked for (unmodifiable, never {@code null})
 * @param resources RFC 8707 {@code resource} URIs asked for (unmodifiable, never {@code null})
 * @param subject for {@code token_exchange}, the credential ({@code namespace/name}) whose access
 *     token is exchanged; otherwise {@code null}
 * @param requestedTokenType the token type a token exchange asks for, or {@code null}
 */
public record Grant(String type, List<String> scopes, List<String> audiences, List<String> resources, String subject,
        String requestedTokenType) {

    public Grant {
        scopes = scopes == null ? List.of() : List.copyOf(scopes);
        audiences = audiences == null ? List.of() : List.copyOf(audiences);
        resources = resources == null ? List.of() : List.copyOf(resources);
    }

    static Grant from(Document document) {
        return new Grant(document.string("type"), document.strings("scopes"), document.strings("audience"),
                document.strings("resource"), document.optionalString("subject"),
                document.optionalString("requested_token_type"));
    }
}
