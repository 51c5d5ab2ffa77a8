package dev.tokenvault.client;

/**
 * A finished sign-in ({@link TokenVaultClient#finishSignIn}): the stored credential (never a
 * token) and whether it was created ({@code false}: an existing one was repaired or replaced).
 */
public record SignedIn(Credential credential, boolean created) {
}
