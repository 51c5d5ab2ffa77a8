package dev.tokenvault.client;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@link TokenVaultClient#exchangeToken} asks the credential's provider for (RFC 8693): a
 * token for another audience or resource, with narrower scopes, or of another type. Empty lists
 * and {@code null} leave a member out, so the provider decides; the daemon wants at least one
 * audience, resource or scope (else a 400 {@code invalid_field}, field {@code audience}). The
 * subject is always the credential's stored access token: the refresh token never leaves the
 * vault for an exchange.
 * {@code TokenExchangeOptions.defaults().withAudience("https://api.example").withScopes(List.of("read"))}.
 *
 * @param audiences RFC 8693 {@code audience} values (unmodifiable, never {@code null})
 * @param resources RFC 8707 {@code resource} URIs (unmodifiable, never {@code null})
 * @param scopes the scopes the derived token should have (unmodifiable, never {@code null})
 * @param requestedTokenType RFC 8693 {@code requested_token_type}, such as
 *     {@code urn:ietf:params:oauth:token-type:access_token}, or {@code null}
 */
public record TokenExchangeOptions(List<String> audiences, List<String> resources, List<String> scopes,
        String requestedTokenType) {

    public TokenExchangeOptions {
        audiences = audiences == null ? List.of() : List.copyOf(audiences);
        resources = resources == null ? List.of() : List.copyOf(resources);
        scopes = scopes == null ? List.of() : List.copyOf(scopes);
    }

    /** Nothing asked for yet: add an audience, a resource or scopes, which the daemon requires. */
    public static TokenExchangeOptions defaults() {
        return new TokenExchangeOptions(null, null, null, null);
    }

    /** One audience (replacing any others). */
    public TokenExchangeOptions withAudience(String audience) {
        return withAudiences(List.of(audience));
    }

    public TokenExchangeOptions withAudiences(List<String> audiences) {
        return new TokenExchangeOptions(audiences, resources, scopes, requestedTokenType);
    }

    public TokenExchangeOptions withResources(List<String> resources) {
        return new TokenExchangeOptions(audiences, resources, scopes, requestedTokenType);
    }

    public TokenExchangeOptions withScopes(List<String> scopes) {
        return new TokenExchangeOptions(audiences, resources, scopes, requestedTokenType);
    }

    public TokenExchangeOptions withRequestedTokenType(String requestedTokenType) {
        return new TokenExchangeOptions(audiences, resources, scopes, requestedTokenType);
    }

    /** The request's JSON document: only what was asked for (the daemon refuses unknown members). */
    Map<String, Object> toJson() {
        Map<String, Object> body = new LinkedHashMap<>();
        if (!audiences.isEmpty()) {
            body.put("audience", audiences);
        }
        if (!resources.isEmpty()) {
            body.put("resource", resources);
        }
        if (!scopes.isEmpty()) {
            body.put("scopes", scopes);
        }
        if (requestedTokenType != null) {
            body.put("requested_token_type", requestedTokenType);
        }
        return body;
    }
}
