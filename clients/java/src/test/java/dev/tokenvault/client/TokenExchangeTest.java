package dev.tokenvault.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link TokenVaultClient#exchangeToken} against the real daemon and a real RFC 8693 server
 * ({@link AuthlibServer}): the credential is an access token the server issued to the client
 * credentials grant, stored with provider {@code authlib}; the daemon exchanges it there.
 */
class TokenExchangeTest {
    private static final String ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

    private TestProvider provider;
    private AuthlibServer authlib;
    private TestDaemon daemon;
    private TokenVaultClient vault;
    private String stored;

    @BeforeEach
    void start() throws Exception {
        provider = new TestProvider();
        authlib = AuthlibServer.start();
        daemon = TestDaemon.start(provider, null, authlib.issuer);
        vault = new TokenVaultClient(daemon.socket);
        Map<String, Object> issued = authlib.clientCredentials("read write");
        stored = (String) issued.get("access_token");
        Stored put = vault.put("apps/reports", "authlib",
                Map.of("access_token", stored, "token_type", "Bearer", "expires_in", 3600), null);
        assertTrue(put.created());
    }

    @AfterEach
    void stop() throws Exception {
        try {
            if (daemon != null) {
                daemon.close();
            }
        } finally {
            if (authlib != null) {
                authlib.close();
            }
            provider.close();
        }
    }

    @Test
    void aDerivedTokenIsExchangedOnceAndAnsweredAgainFromTheDaemonsMemory() throws Exception {
        Token derived = vault.exchangeToken("apps/reports", TokenExchangeOptions.defaults()
                .withAudiences(List.of("api.example", "reports.example")).withScopes(List.of("read", "write")));
        assertNotEquals(stored, derived.accessToken(), "a derived token, not the credential's own");
        assertFalse(derived.accessToken().isEmpty());
        assertEquals(ACCESS_TOKEN_TYPE, derived.issuedTokenType());
        assertEquals("Bearer", derived.tokenType());
        assertEquals(List.of("read", "write"), sorted(derived.scopes()));
        assertTrue(OffsetDateTime.parse(derived.expiresAt()).isAfter(OffsetDateTime.now()), derived.expiresAt());
        assertNull(derived.idToken());
        String shown = derived.toString();
        assertFalse(shown.contains(derived.accessToken()) || shown.contains(stored), shown);
        assertTrue(shown.contains(ACCESS_TOKEN_TYPE), shown);

        // The same request with its lists in another order: the daemon's cached token, no new exchange.
        Token again = vault.exchangeToken("apps/reports", TokenExchangeOptions.defaults()
                .withAudiences(List.of("reports.example", "api.example")).withScopes(List.of("write", "read")));
        assertEquals(derived.accessToken(), again.accessToken());
        Map<String, Object> exchanges = authlib.exchanges();
        assertEquals(1L, exchanges.get("count"), exchanges.toString());
        Map<?, ?> request = (Map<?, ?>) ((List<?>) exchanges.get("requests")).get(0);
        assertEquals(List.of("api.example", "reports.example"), sorted(request.get("audience")));
        assertEquals("read write", String.join(" ", sorted(List.of(((String) request.get("scope")).split(" ")))));
        assertEquals(ACCESS_TOKEN_TYPE, request.get("subject_token_type"));

        // An audience the server does not serve: its refusal, with the OAuth error, as the caller's 422.
        UnprocessableException refused = assertThrows(UnprocessableException.class, () -> vault.exchangeToken(
                "apps/reports", TokenExchangeOptions.defaults().withAudience("evil.example")));
        assertEquals("provider_rejected", refused.code());
        assertEquals(422, refused.status());
        assertNotNull(refused.detail());
        assertTrue(refused.detail().contains("invalid_target"), refused.detail());
        assertEquals(1L, authlib.exchanges().get("count"));

        // Neither the exchange nor its refusal touched the credential.
        assertEquals(stored, vault.token("apps/reports").accessToken());
        Credential credential = vault.show("apps/reports");
        assertEquals("active", credential.status());
        assertEquals(1L, credential.generation());
        assertNull(credential.raw().get("last_error"), credential.raw().toString());
    }

    @Test
    void theRequestIsCheckedAndProblemsKeepTheirCodes() {
        // Neither an audience, a resource nor scopes: the derived token would be the credential's own.
        BadRequestException nothing = assertThrows(BadRequestException.class,
                () -> vault.exchangeToken("apps/reports", TokenExchangeOptions.defaults()));
        assertEquals(400, nothing.status());
        assertEquals("invalid_field", nothing.code());
        assertEquals("audience", nothing.field());
        BadRequestException unknownType = assertThrows(BadRequestException.class, () -> vault.exchangeToken(
                "apps/reports", TokenExchangeOptions.defaults().withAudience("api.example")
                        .withRequestedTokenType("urn:ietf:params:oauth:token-type:refresh_token")));
        assertEquals("invalid_field", unknownType.code());
        assertEquals("requested_token_type", unknownType.field());
        NotFoundException missing = assertThrows(NotFoundException.class, () -> vault.exchangeToken(
                "apps/nobody", TokenExchangeOptions.defaults().withAudience("api.example")));
        assertEquals("credential_not_found", missing.code());
        UnprocessableException scope = assertThrows(UnprocessableException.class, () -> vault.exchangeToken(
                "apps/reports", TokenExchangeOptions.defaults().withScopes(List.of("admin"))));
        assertEquals("provider_rejected", scope.code());
        assertTrue(scope.detail().contains("invalid_scope"), scope.detail());
        assertThrows(IllegalArgumentException.class, () -> vault.exchangeToken("no-slash", null));
    }

    @Test
    void theReadmeExampleRunsAsItSays() {
        PrintStream standard = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            ReadmeExample.exchangeForAnotherAudience(vault);
        } finally {
            System.setOut(standard);
        }
        assertEquals(ACCESS_TOKEN_TYPE + " [read]\n", captured.toString(StandardCharsets.UTF_8));
    }

    private static List<String> sorted(Object strings) {
        List<String> copy = new ArrayList<>();
        for (Object item : (List<?>) strings) {
            copy.add((String) item);
        }
        copy.sort(null);
        return copy;
    }
}
