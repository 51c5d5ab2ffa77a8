package dev.tokenvault.client;

import java.util.List;

/**
 * An access token: the credential's own ({@code GET …/token}) or one derived from it
 * ({@code POST …/token-exchange}); never a refresh token, which the daemon does not give out.
 * Its {@link #toString()} never shows the token or the id token, so it can be logged.
 *
 * @param accessToken the token to send
 * @param tokenType its type, {@code Bearer} when the daemon does not say
 * @param expiresAt when it expires (RFC 3339), or {@code null} when the provider did not say
 * @param idToken the OpenID Connect id token, or {@code null}
 * @param issuedTokenType a derived token's RFC 8693 {@code issued_token_type}
 *     ({@code urn:ietf:params:oauth:token-type:access_token}, …); {@code null} for the credential's own
 * @param scopes a derived token's scopes, unmodifiable; {@code null} for the credential's own
 */
public record Token(String accessToken, String tokenType, String expiresAt, String idToken, String issuedTokenType,
        List<String> scopes) {

    public Token {
        scopes = scopes == null ? null : List.copyOf(scopes);
    }

    /** The credential's own token, which has no issued token type or scopes of its own. */
    public Token(String accessToken, String tokenType, String expiresAt, String idToken) {
        this(accessToken, tokenType, expiresAt, idToken, null, null);
    }

    /** The {@code Authorization} header's value: {@code Bearer <token>}. */
    public String authorization() {
        return tokenType + " " + accessToken;
    }

    @Override
    public String toString() {
        // The issued type and scopes say what the token is for, not what it is: shown when there.
        String derived = issuedTokenType == null && scopes == null ? ""
                : ", issuedTokenType=" + issuedTokenType + ", scopes=" + scopes;
        return "Token[tokenType=" + tokenType + ", expiresAt=" + expiresAt + derived + ", redacted]";
    }

    static Token from(Document document) {
        String type = document.optionalString("token_type");
        return new Token(document.string("access_token"), type == null || type.isEmpty() ? "Bearer" : type,
                document.optionalString("expires_at"), document.optionalString("id_token"),
                document.optionalString("issued_token_type"),
                document.optionalList("scopes") == null ? null : document.strings("scopes"));
    }
}
