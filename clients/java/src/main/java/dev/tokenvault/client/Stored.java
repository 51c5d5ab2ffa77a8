package dev.tokenvault.client;

/**
 * What {@link TokenVaultClient#put} did: the credential's metadata, and whether it was created
 * ({@code false}: an existing one was replaced).
 */
public record Stored(Credential credential, boolean created) {
}
