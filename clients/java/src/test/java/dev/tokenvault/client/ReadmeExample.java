package dev.tokenvault.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * The Java blocks of clients/java/README.md, between the markers: ReadmeExampleTest checks that
 * the README shows exactly these lines, and runs them against a test daemon, so they cannot rot.
 */
final class ReadmeExample {
    private ReadmeExample() {
    }

    static void walkThrough(String socket) {
        // README begin
        TokenVaultClient vault = new TokenVaultClient(socket); // null: $TOKENVAULT_SOCKET, /run/tokenvault/…, ./.tokenvault/run/…
        String sdkAnswer = "{\"access_token\":\"at-3\",\"refresh_token\":\"rt-3\",\"expires_in\":3600}";
        vault.put("payments/dave", "oauth2", sdkAnswer, Map.of("env", "dev")); // the token response as the SDK gave it
        Token token = vault.token("payments/dave", Duration.ofMinutes(1));
        System.out.println(token.authorization()); // Bearer at-3
        for (Credential credential : vault.listAll("payments", null)) {
            System.out.println(credential.id() + " " + credential.status()); // payments/dave active
        }
        try {
            vault.token("payments/dave", Duration.ofDays(1));
        } catch (ConflictException problem) { // 409: the credential's state does not allow it
            System.out.println(problem.code()); // min_ttl_unreachable
        }
        // README end
    }

    static void callThroughTheProxy(TokenVaultClient vault) {
        // README begin
        try (UpstreamResponse answer = vault.call("payments/alice", "GET", "/v1/accounts")) { // never sees the token
            System.out.println(answer.status() + " " + new String(answer.readAllBytes(), StandardCharsets.UTF_8));
        }
        // README end
    }

    /** Run by {@link TokenExchangeTest}: the credential is an access token of the Authlib server's. */
    static void exchangeForAnotherAudience(TokenVaultClient vault) {
        // README begin
        Token derived = vault.exchangeToken("apps/reports", TokenExchangeOptions.defaults()
                .withAudience("api.example").withScopes(List.of("read"))); // the credential's own token stays inside
        System.out.println(derived.issuedTokenType() + " " + derived.scopes()); // urn:ietf:params:oauth:token-type:access_token [read]
        // README end
    }

    static void receive(String secret, Map<String, String> headers, byte[] body) {
        // README begin
        try {
            Webhooks.verify(secret, headers, body); // the body exactly as received, before parsing it
        } catch (WebhookVerificationException refused) {
            System.out.println("refused: " + refused.getMessage()); // answer 400, do nothing
        }
        // README end
    }
}
