package dev.tokenvault.client;

/**
 * What {@link TokenVaultClient#delete} did.
 *
 * @param revocationPending the provider did not confirm revocation (202): the credential is
 *     {@code revoke_pending} ({@link #credential()}) and the daemon keeps trying; otherwise it is gone
 * @param revoked whether the provider confirmed revocation ({@code false} also without a revocation
 *     endpoint, or with {@code force}); {@code null} when pending, or from a daemon that does not say
 * @param credential the credential as it stays while revocation is pending, else {@code null}
 */
public record Deleted(boolean revocationPending, Boolean revoked, Credential credential) {
}
