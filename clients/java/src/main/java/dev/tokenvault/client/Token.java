package dev.tokenvault.client;

/**
 * An access token ({@code GET …/token}): never a refresh token, which the daemon does not give
 * out. Its {@link #toString()} never shows the token or the id token, so it can be logged.
 *
 * @param accessToken the token to send
 * @param tokenType its type, {@code Bearer} when the daemon does not say
 * @param expiresAt when it expires (RFC 3339), or {@code null} when the provider did not say
 * @param idToken the OpenID Connect id token, or {@code null}
 */
public record Token(String accessToken, String tokenType, String expiresAt, String idToken) {
    /** The {@code Authorization} header's value: {@code Bearer <token>}. */
    public String authorization() {
        return tokenType + " " + accessToken;
    }

    @Override
    public String toString() {
        return "Token[tokenType=" + tokenType + ", expiresAt=" + expiresAt + ", redacted]";
    }

    static Token from(Document document) {
        String type = document.optionalString("token_type");
        return new Token(document.string("access_token"), type == null || type.isEmpty() ? "Bearer" : type,
                document.optionalString("expires_at"), document.optionalString("id_token"));
    }
}
