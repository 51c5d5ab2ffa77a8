package dev.tokenvault.client;

import java.util.Map;

/**
 * One line of {@code /v1/events}.
 *
 * @param type {@code stored}, {@code refreshed}, {@code refresh_failed}, {@code status_changed},
 *     {@code deleted}, {@code authorized} or {@code authorization_failed} (a device sign-in's end)
 * @param status the credential's status after the change; {@code null} when a sign-in failed for
 *     a credential that does not exist
 * @param generation likewise {@code null} then
 * @param error for a failure, its {@code code} and {@code message}; otherwise {@code null}
 */
public record Event(String type, String credentialId, String at, String status, Long generation,
        Map<String, Object> error) {

    static Event from(Document document) {
        return new Event(document.string("type"), document.string("credential_id"), document.string("at"),
                document.optionalString("status"), document.optionalInteger("generation"),
                document.optionalObject("error"));
    }
}
