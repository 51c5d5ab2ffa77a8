package dev.tokenvault.client;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What {@link TokenVaultClient#exchange} sends: a one-time authorization code with its PKCE
 * verifier, redeemed by the daemon at provider instance {@code provider}, so the app's backend never
 * holds the refresh token. {@code ExchangeRequest.of(provider, code, verifier, redirectUri).withNonce(nonce)}.
 *
 * @param nonce the OpenID Connect nonce the id token must carry, or {@code null}
 * @param state the state sent with the authorization request, or {@code null}
 * @param labels the credential's labels (never {@code null}: empty by default)
 */
public record ExchangeRequest(String provider, String code, String codeVerifier, String redirectUri, String nonce,
        String state, Map<String, String> labels) {

    public ExchangeRequest {
        labels = labels == null ? Map.of() : Map.copyOf(labels);
    }

    public static ExchangeRequest of(String provider, String code, String codeVerifier, String redirectUri) {
        return new ExchangeRequest(provider, code, codeVerifier, redirectUri, null, null, Map.of());
    }

    public ExchangeRequest withNonce(String nonce) {
        return new ExchangeRequest(provider, code, codeVerifier, redirectUri, nonce, state, labels);
    }

    public ExchangeRequest withState(String state) {
        return new ExchangeRequest(provider, code, codeVerifier, redirectUri, nonce, state, labels);
    }

    public ExchangeRequest withLabels(Map<String, String> labels) {
        return new ExchangeRequest(provider, code, codeVerifier, redirectUri, nonce, state, labels);
    }

    /** The request's JSON document. */
    Map<String, Object> toJson() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("provider", provider);
        body.put("code", code);
        body.put("code_verifier", codeVerifier);
        body.put("redirect_uri", redirectUri);
        body.put("labels", labels);
        if (nonce != null) {
            body.put("nonce", nonce);
        }
        if (state != null) {
            body.put("state", state);
        }
        return body;
    }

    @Override
    public String toString() {
        // The code and its verifier redeem tokens until spent: never logged.
        return "ExchangeRequest[provider=" + provider + ", redirectUri=" + redirectUri + ", labels=" + labels
                + ", redacted]";
    }
}
