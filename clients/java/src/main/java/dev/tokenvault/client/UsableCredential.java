package dev.tokenvault.client;

import java.util.List;

/**
 * A credential the caller may use through the proxy, and the upstream bases a call may reach
 * ({@code GET /v1/proxy/credentials}).
 */
public record UsableCredential(String id, String provider, String status, List<String> apiBaseUrls) {
    public UsableCredential {
        apiBaseUrls = List.copyOf(apiBaseUrls);
    }

    static UsableCredential from(Document document) {
        return new UsableCredential(document.string("id"), document.string("provider"), document.string("status"),
                document.requiredStrings("api_base_urls")); // required, unlike most lists
    }
}
