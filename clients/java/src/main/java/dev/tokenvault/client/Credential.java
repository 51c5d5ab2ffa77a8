package dev.tokenvault.client;

import java.util.List;
import java.util.Map;

/**
 * A credential's metadata ({@code GET /v1/credentials/{namespace}/{name}}): never a secret.
 * Times are RFC 3339 strings in UTC; members the daemon omits are {@code null}. {@link #raw()}
 * keeps the whole document, so what a newer daemon adds is not lost.
 *
 * @param id {@code namespace/name}
 * @param kind the provider's kind ({@code oauth2}, …)
 * @param status {@code active}, {@code failing}, {@code needs_reauth}, {@code expired},
 *     {@code revoke_pending}, {@code pending_authorization}, …
 * @param generation grows by one with every new set of tokens
 * @param lastError the last refresh failure ({@code code}, {@code message}, {@code at}), or {@code null}
 * @param pendingCommit a provider answer the database has not taken yet, or {@code null}
 * @param grant how the vault obtains and renews the tokens itself, or {@code null} for tokens a
 *     put or a sign-in stored
 */
public record Credential(
        String id,
        String namespace,
        String name,
        String provider,
        String kind,
        String status,
        long generation,
        List<String> scopes,
        Map<String, String> labels,
        String issuedAt,
        String createdAt,
        String updatedAt,
        boolean hasRefreshToken,
        boolean hasIdToken,
        String subject,
        String tokenType,
        String expiresAt,
        String refreshAt,
        String refreshTokenExpiresAt,
        Long refreshFailures,
        Map<String, Object> lastError,
        Map<String, Object> pendingCommit,
        Grant grant,
        Map<String, Object> raw) {

    static Credential from(Document document) {
        Document grant = document.optionalDocument("grant");
        return new Credential(
                document.string("id"),
                document.string("namespace"),
                document.string("name"),
                document.string("provider"),
                document.string("kind"),
                document.string("status"),
                document.integer("generation"),
                document.strings("scopes"),
                document.stringMap("labels"),
                document.string("issued_at"),
                document.string("created_at"),
                document.string("updated_at"),
                document.bool("has_refresh_token"),
                document.bool("has_id_token"),
                document.optionalString("subject"),
                document.optionalString("token_type"),
                document.optionalString("expires_at"),
                document.optionalString("refresh_at"),
                document.optionalString("refresh_token_expires_at"),
                document.optionalInteger("refresh_failures"),
                document.optionalObject("last_error"),
                document.optionalObject("pending_commit"),
                grant == null ? null : Grant.from(grant),
                document.raw());
    }
}
