package dev.tokenvault.client;

/**
 * An RFC 9457 problem document the daemon answered with, as carried by a
 * {@link ProblemException}. {@code code} is stable and machine-readable ({@code
 * credential_not_found}, {@code token_expired}, …); {@code detail} is for people and never holds
 * a secret. Members the daemon did not send are {@code null}.
 *
 * @param status the HTTP status of the answer
 * @param code the stable code; {@code http_<status>} for an answer without a problem document
 * @param title a short summary of the code
 * @param detail what happened, for people
 * @param field for a 400, the offending body path ({@code token.expires_in}) or query parameter ({@code limit})
 * @param permission for a 403, the permission the caller lacks
 * @param instance {@code urn:tokenvault:request:<X-Request-Id>}, as in the daemon's log lines
 */
public record Problem(
        int status, String code, String title, String detail, String field, String permission, String instance) {
}
