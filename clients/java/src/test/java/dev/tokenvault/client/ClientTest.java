package dev.tokenvault.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The Java client against the real daemon (a fresh vault and a loopback provider per test), as
 * the Python and Go clients are tested: every method, problems mapped to their class with code
 * and field, streams that follow a refresh and end when the credential or the daemon goes, calls
 * through the proxy, and no token in anything the client shows that is not a token read.
 */
class ClientTest {
    private TestProvider provider;
    private TestDaemon daemon;
    private TokenVaultClient vault;

    @BeforeEach
    void start() throws Exception {
        provider = new TestProvider();
        daemon = TestDaemon.start(provider);
        vault = new TokenVaultClient(daemon.socket);
    }

    @AfterEach
    void stop() throws Exception {
        if (daemon != null) {
            daemon.close();
        }
        provider.close();
    }

    private Credential put(String credentialId) {
        Stored stored = vault.put(credentialId, "idp", provider.issue(), Map.of("env", "dev"));
        assertTrue(stored.created());
        return stored.credential();
    }

    /** The daemon refreshes a credential on demand at most once a second here (limits.on_demand_refresh_seconds). */
    private static void pastTheRefreshLimit() throws InterruptedException {
        Thread.sleep(1100);
    }

    @Test
    void healthSaysTheDaemonServes() {
        Map<String, Object> health = vault.health();
        assertEquals("ok", health.get("status"));
        assertTrue(health.get("database") instanceof Map);
        assertEquals(daemon.socket, vault.socketPath());
    }

    @Test
    void storeReadListRefreshAndDelete() throws Exception {
        Credential stored = put("payments/alice");
        assertEquals(List.of("payments/alice", "idp", "active", Map.of("env", "dev")),
                List.of(stored.id(), stored.provider(), stored.status(), stored.labels()));
        assertTrue(stored.hasRefreshToken());
        assertEquals("payments", stored.namespace());
        assertEquals(stored.id(), stored.raw().get("id"));

        Token token = vault.token("payments/alice", Duration.ofMinutes(1));
        assertEquals(provider.access(), token.accessToken());
        assertEquals("Bearer " + provider.access(), token.authorization());
        assertFalse(token.toString().contains(token.accessToken()), token.toString());
        assertEquals(stored.generation(), vault.show("payments/alice").generation());
        assertFalse(vault.put("payments/alice", "idp", "{\"access_token\":\"x\",\"expires_in\":600}").created());
        assertEquals("x", vault.token("payments/alice").accessToken());

        put("payments/bob");
        Page<Credential> page = vault.list(ListOptions.all().withNamespace("payments").withLimit(1));
        assertEquals(List.of("payments/alice"), ids(page.items()));
        assertNotNull(page.nextCursor());
        Page<Credential> second = vault.list(ListOptions.all().withNamespace("payments").withLimit(1)
                .withCursor(page.nextCursor()));
        assertEquals(List.of("payments/bob"), ids(second.items()));
        assertEquals(List.of("payments/alice", "payments/bob"), ids(vault.listAll()));
        assertEquals(List.of(), ids(vault.listAll("elsewhere", null)));
        assertEquals(List.of("payments/bob"), ids(vault.list(ListOptions.all().withStatus("active")
                .withCursor(page.nextCursor())).items()));

        pastTheRefreshLimit();
        Credential refreshed = vault.refresh("payments/bob");
        assertTrue(refreshed.generation() > 1, refreshed.toString());
        // A fractional min_ttl is sent as seconds with a fraction (1.5), as the Go client does.
        assertEquals(provider.access(), vault.token("payments/bob", Duration.ofMillis(1500)).accessToken());

        Deleted deleted = vault.delete("payments/bob");
        assertFalse(deleted.revocationPending());
        assertEquals(Boolean.FALSE, deleted.revoked(), "idp has no revocation endpoint: nothing was revoked");
        assertNull(deleted.credential());
        NotFoundException gone = assertThrows(NotFoundException.class, () -> vault.show("payments/bob"));
        assertEquals("credential_not_found", gone.code());
        assertEquals(404, gone.status());
        assertFalse(vault.delete("payments/alice", true).revocationPending());
    }

    @Test
    void aSignInIsStartedAndFinishedOnce() {
        SignIn started = vault.startSignIn("people/erin", SignInRequest.url("idp", "https://app.example/cb")
                .withScopes(List.of("profile")).withLabels(Map.of("via", "java")));
        assertFalse(started.pushed());
        assertNotNull(started.expiresAt());
        URI url = URI.create(started.authorizationUrl());
        Map<String, String> query = query(url.getRawQuery());
        assertEquals("/authorize", url.getPath());
        assertEquals("S256", query.get("code_challenge_method"));
        assertEquals(43, query.get("state").length());
        String callback = "https://app.example/cb?code=one-time&state=" + query.get("state");
        SignedIn signedIn = vault.finishSignIn("people/erin", callback);
        assertTrue(signedIn.created());
        assertEquals("people/erin", signedIn.credential().id());
        assertEquals(Map.of("via", "java"), signedIn.credential().labels());
        NotFoundException spent = assertThrows(NotFoundException.class,
                () -> vault.finishSignIn("people/erin", callback));
        assertEquals("authorization_unknown", spent.code());

        SignIn parameters = vault.startSignIn("people/erin",
                SignInRequest.url("idp", "https://app.example/cb").withMode("parameters"));
        assertNull(parameters.authorizationUrl());
        assertEquals("vault-client", parameters.parameters().get("client_id"));
    }

    @Test
    void aDeviceSignInIsPolledByTheDaemon() throws Exception {
        SignIn started = vault.startSignIn("people/faye", SignInRequest.device("idp").withScopes(List.of("profile")));
        assertEquals("WDJB-MJHT", started.userCode());
        assertEquals(1L, started.interval());
        assertTrue(started.verificationUri().endsWith("/verify"));
        assertNull(started.authorizationUrl());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        SignInStatus status = vault.signInStatus("people/faye");
        while (!status.pending().isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(200);
            status = vault.signInStatus("people/faye");
        }
        assertNotNull(status.last(), status.toString());
        assertEquals("authorized", status.last().get("outcome"), status.toString());
        assertTrue(vault.show("people/faye").hasRefreshToken());
    }

    @Test
    void exchangeRedeemsACode() {
        Exchanged exchanged = vault.exchange("payments/carol",
                ExchangeRequest.of("idp", "one-time", "v".repeat(43), "https://app.example/cb")
                        .withLabels(Map.of("via", "java")));
        assertTrue(exchanged.created());
        assertEquals(provider.access(), exchanged.token().accessToken());
        assertTrue(exchanged.credential().hasRefreshToken());
        assertEquals(Map.of("via", "java"), exchanged.credential().labels());
        for (String token : List.of(exchanged.token().accessToken(), provider.refreshToken())) {
            assertFalse(exchanged.toString().contains(token), exchanged.toString());
        }
        assertFalse(ExchangeRequest.of("idp", "one-time", "v".repeat(43), "x").toString().contains("one-time"));
    }

    @Test
    void watchAndEventsFollowARefresh() throws Exception {
        put("payments/alice");
        pastTheRefreshLimit();
        try (ChangeStream<Credential> watch = vault.watch("payments/alice");
                ChangeStream<Event> events = vault.events()) {
            Credential first = watch.next();
            assertEquals("payments/alice", first.id());
            Credential refreshed = vault.refresh("payments/alice");
            assertEquals(refreshed.generation(), watch.next().generation());
            Event event = events.next();
            assertEquals(List.of("refreshed", "payments/alice", refreshed.generation()),
                    List.of(event.type(), event.credentialId(), event.generation()));
            assertEquals("active", event.status());
            vault.delete("payments/alice");
            List<Credential> rest = new ArrayList<>();
            watch.forEach(rest::add);
            assertEquals(List.of(), rest, "the watch ends when the credential is deleted");
            assertFalse(watch.hasNext());
            assertThrows(java.util.NoSuchElementException.class, watch::next);
            assertEquals("deleted", events.next().type());
        }
    }

    @Test
    void theWatchOfNoCredentialIsRefused() {
        NotFoundException refused = assertThrows(NotFoundException.class, () -> vault.watch("payments/nobody"));
        assertEquals("credential_not_found", refused.code());
    }

    @Test
    void streamsEndCleanlyWhenTheDaemonStops() throws Exception {
        put("payments/alice");
        ChangeStream<Credential> watch = vault.watch("payments/alice");
        assertEquals("payments/alice", watch.next().id());
        ChangeStream<Event> events = vault.events();
        CompletableFuture<List<Credential>> watched = drain(watch);
        CompletableFuture<List<Event>> heard = drain(events);
        Thread.sleep(300);
        daemon.stop();
        assertEquals(List.of(), watched.get(15, TimeUnit.SECONDS));
        assertEquals(List.of(), heard.get(15, TimeUnit.SECONDS));
    }

    @Test
    void aStreamWaitsPastTheClientTimeoutAndClosesFromAnotherThread() throws Exception {
        put("payments/alice");
        pastTheRefreshLimit();
        TokenVaultClient quick = new TokenVaultClient(daemon.socket, Duration.ofSeconds(1));
        ChangeStream<Credential> watch = quick.watch("payments/alice");
        Credential first = watch.next();
        // The next line comes 1.5 s later, while this thread waits in the read.
        CompletableFuture<Credential> refreshed = CompletableFuture.supplyAsync(() -> {
            sleep(1500);
            return vault.refresh("payments/alice");
        });
        assertTrue(watch.next().generation() > first.generation());
        assertEquals(first.generation() + 1, refreshed.get(10, TimeUnit.SECONDS).generation());
        CompletableFuture<List<Credential>> rest = drain(watch);
        Thread.sleep(300);
        long closing = System.nanoTime();
        watch.close();
        assertEquals(List.of(), rest.get(20, TimeUnit.SECONDS));
        // Generous for a loaded machine, yet far below a hang (which the get above would also catch).
        assertTrue(System.nanoTime() - closing < TimeUnit.SECONDS.toNanos(10));
        watch.close(); // again: nothing happens
    }

    @Test
    void callsThroughTheProxyNeverSeeTheToken() throws Exception {
        put("payments/alice");
        String shown;
        try (UpstreamResponse answer = vault.call("payments/alice", "GET", "/hello",
                Map.of("Authorization", "Bearer mine", "Accept", "text/plain"))) {
            assertEquals(200, answer.status());
            assertEquals("hello from the api\n", new String(answer.readAllBytes(), StandardCharsets.UTF_8));
            assertFalse(answer.refreshed());
            assertNull(answer.header("TokenVault-Proxy"));
            assertEquals("text/plain", answer.header("content-type"));
            shown = answer.headers() + " " + answer;
        }
        assertEquals("true", provider.apiCalls().get(provider.apiCalls().size() - 1).get("authorized"));
        try (UpstreamResponse answer = vault.call("payments/alice", "get", "/hello",
                Map.of("Connection", "close"))) {
            assertEquals("hello from the api\n", new String(answer.body().readAllBytes(), StandardCharsets.UTF_8));
        }
        try (UpstreamResponse answer = vault.call("payments/alice", "GET", "/redirect")) {
            assertEquals(302, answer.status());
            assertEquals("/v1/credentials/payments/alice/token", answer.header("location"));
            assertEquals(0, answer.readAllBytes().length);
        }
        // An absolute URL inside the instance's base, and a body streamed chunked both ways.
        byte[] payload = "{\"amount\": 42, \"note\": \"naïve ✓\"}".repeat(5000).getBytes(StandardCharsets.UTF_8);
        try (UpstreamResponse answer = vault.call("payments/alice", "POST", provider.url + "/api/echo",
                Map.of("Content-Type", "application/json"), new ByteArrayInputStream(payload));
                InputStream body = answer.body()) {
            assertEquals(200, answer.status());
            assertEquals("application/json", answer.header("Content-Type"));
            assertEquals(new String(payload, StandardCharsets.UTF_8),
                    new String(body.readAllBytes(), StandardCharsets.UTF_8));
        }
        try (UpstreamResponse answer = vault.call("payments/alice", "PUT", "/echo?x=1",
                Map.of("Content-Type", "text/plain"), "short".getBytes(StandardCharsets.UTF_8))) {
            assertEquals("short", new String(answer.readAllBytes(), StandardCharsets.UTF_8));
        }
        // The options form: a body, a timeout of its own, and a header given twice.
        try (UpstreamResponse answer = vault.call("payments/alice", "POST", "/echo", CallOptions.defaults()
                .withHeaders(Map.of("Content-Type", List.of("text/plain"), "X-Twice", List.of("1", "2")))
                .withBody("options".getBytes(StandardCharsets.UTF_8)).withTimeout(Duration.ofSeconds(20)))) {
            assertEquals("options", new String(answer.readAllBytes(), StandardCharsets.UTF_8));
        }

        List<UsableCredential> usable = new ArrayList<>();
        vault.usableCredentials().forEach(usable::add);
        assertEquals(1, usable.size());
        assertEquals("payments/alice", usable.get(0).id());
        assertEquals(List.of(provider.url + "/api"), usable.get(0).apiBaseUrls());
        List<UsableCredential> none = new ArrayList<>();
        vault.usableCredentials("elsewhere").forEach(none::add);
        assertEquals(List.of(), none);

        UnprocessableException refused = assertThrows(UnprocessableException.class,
                () -> vault.call("payments/alice", "GET", "https://elsewhere.example/"));
        assertEquals("upstream_not_allowed", refused.code());
        assertThrows(IllegalArgumentException.class, () -> vault.call("payments/alice", "GET", "hello"));
        assertThrows(IllegalArgumentException.class, () -> vault.call("payments/alice", "GET", "/a b"));
        assertThrows(IllegalArgumentException.class, () -> vault.call("payments/alice", "GET", "/x",
                Map.of("X-Evil", "a\r\nInjected: yes")));
        assertThrows(IllegalArgumentException.class, () -> vault.call("payments/alice", "GET", "/x",
                Map.of("Content-Length", "5")));
        assertThrows(IllegalArgumentException.class, () -> vault.call("payments/alice", "GET", "/x",
                CallOptions.defaults().withHeaders(Map.of("Transfer-Encoding", List.of("chunked")))));
        for (String token : provider.issued()) {
            assertFalse((shown + usable + refused.getMessage()).contains(token));
        }
    }

    @Test
    void aCallWithARefusedTokenIsRefreshedAndSentAgain() throws Exception {
        // Stored with an access token the API does not know, and a refresh token the provider honours.
        Map<String, Object> token = new LinkedHashMap<>(provider.issue());
        token.put("access_token", "at-stale");
        vault.put("payments/alice", "idp", token, null);
        pastTheRefreshLimit();
        try (UpstreamResponse answer = vault.call("payments/alice", "GET", "/hello")) {
            assertEquals(200, answer.status());
            assertTrue(answer.refreshed());
            assertEquals("hello from the api\n", new String(answer.readAllBytes(), StandardCharsets.UTF_8));
        }
        assertEquals(2, vault.show("payments/alice").generation());
    }

    @Test
    void problemsCarryTheirCodeAndField() {
        put("payments/alice");
        Map<String, String> noSuchProvider = Map.of("access_token", "a");
        expectProblem(NotFoundException.class, "credential_not_found", null, () -> vault.show("payments/nobody"));
        expectProblem(UnprocessableException.class, "unknown_provider", null,
                () -> vault.put("payments/x", "no-such-provider", noSuchProvider, null));
        expectProblem(BadRequestException.class, "invalid_payload", null,
                () -> vault.put("payments/x", "idp", "{\"access_token\":\"a\",\"verify_token\":\"b\"}"));
        assertThrows(IllegalArgumentException.class, () -> vault.put("payments/x", "idp", "{\"access_token\": }"),
                "text that is not JSON is refused before it is sent");
        expectProblem(BadRequestException.class, "invalid_field", "token.access_token",
                () -> vault.put("payments/x", "idp", Map.of("access_token", 7), null));
        expectProblem(BadRequestException.class, "invalid_field", "limit",
                () -> vault.list(ListOptions.all().withLimit(100000)));
        expectProblem(ConflictException.class, null, null, () -> vault.token("payments/alice", Duration.ofDays(1)));
        expectProblem(BadRequestException.class, "invalid_credential_id", null, () -> vault.show("payments/-x"));
        expectProblem(UnprocessableException.class, "unknown_provider", null,
                () -> vault.startSignIn("people/x", SignInRequest.url("nope", "https://app.example/cb")));
        expectProblem(NotFoundException.class, "credential_not_found", null, () -> vault.refresh("payments/nobody"));
        expectProblem(NotFoundException.class, "credential_not_found", null, () -> vault.delete("payments/nobody"));

        assertThrows(IllegalArgumentException.class, () -> vault.show("no-slash"));
        assertThrows(IllegalArgumentException.class, () -> vault.show("a/b/c"));
        assertThrows(IllegalArgumentException.class, () -> vault.show("payments/.."));
        assertThrows(IllegalArgumentException.class, () -> vault.put("payments/x", "idp", "[1]"));
        ConnectionFailedException unreachable = assertThrows(ConnectionFailedException.class,
                () -> new TokenVaultClient(daemon.socket + ".absent").health());
        assertEquals(daemon.socket + ".absent", unreachable.socketPath());
        assertTrue(unreachable instanceof TokenVaultException);
    }

    private static void expectProblem(Class<? extends ProblemException> kind, String code, String field,
            Executable call) {
        ProblemException problem = assertThrows(kind, call);
        if (code != null) {
            assertEquals(code, problem.code(), problem.getMessage());
        }
        assertEquals(ProblemException.CODES.get(problem.code()), problem.status(), problem.getMessage());
        assertEquals(field, problem.field(), problem.getMessage());
        assertNotNull(problem.instance(), problem.getMessage());
        assertTrue(problem.instance().startsWith("urn:tokenvault:request:"), problem.getMessage());
        assertNotNull(problem.detail());
        if (field != null) {
            assertTrue(problem.getMessage().contains("field " + field), problem.getMessage());
        }
    }

    private static <T> CompletableFuture<List<T>> drain(ChangeStream<T> stream) {
        return CompletableFuture.supplyAsync(collect(stream));
    }

    private static <T> Supplier<List<T>> collect(ChangeStream<T> stream) {
        return () -> {
            List<T> items = new ArrayList<>();
            stream.forEach(items::add);
            return items;
        };
    }

    private static List<String> ids(Iterable<Credential> credentials) {
        List<String> ids = new ArrayList<>();
        credentials.forEach(credential -> ids.add(credential.id()));
        return ids;
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> query = new LinkedHashMap<>();
        for (String pair : raw.split("&")) {
            int equals = pair.indexOf('=');
            query.put(URLDecoder.decode(pair.substring(0, equals), StandardCharsets.UTF_8),
                    URLDecoder.decode(pair.substring(equals + 1), StandardCharsets.UTF_8));
        }
        return query;
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            fail(interrupted);
        }
    }
}
