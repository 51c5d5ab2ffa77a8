package dev.tokenvault.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client's own HTTP/1.1, against a socket that answers what a test scripts: what it sends,
 * how it frames what it reads, and how it fails when the answer does not come or breaks off.
 */
class FramingTest {
    private static final String CREDENTIAL = "{\"id\":\"payments/alice\",\"namespace\":\"payments\",\"name\":\"alice\","
            + "\"provider\":\"idp\",\"kind\":\"oauth2\",\"status\":\"active\",\"generation\":3,\"issued_at\":\"t\","
            + "\"created_at\":\"t\",\"updated_at\":\"t\",\"has_refresh_token\":true,\"has_id_token\":false,\"future\":[1]}";

    @TempDir
    Path directory;
    private ScriptedSocket socket;
    private TokenVaultClient vault;

    @BeforeEach
    void start() throws Exception {
        socket = new ScriptedSocket(directory);
        vault = new TokenVaultClient(socket.path, Duration.ofSeconds(5));
    }

    @AfterEach
    void stop() throws Exception {
        socket.close();
    }

    private static String json(int status, String body) {
        return "HTTP/1.1 " + status + " X\r\nContent-Type: application/json\r\nContent-Length: "
                + body.getBytes(java.nio.charset.StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
    }

    @Test
    void requestsAreWrittenAsHttp11WithTheirPartsEncoded() {
        socket.answer(json(200, CREDENTIAL)).answer(json(201, CREDENTIAL))
                .answer(json(200, "{\"items\":[],\"next_cursor\":null}"))
                .answer("HTTP/1.1 204 No Content\r\nTokenVault-Revoked: true\r\n\r\n");
        vault.show("ns/naïve~x");
        Stored stored = vault.put("payments/alice", "idp", " {\"access_token\": \"a\" ,\"x\":[1]} ", Map.of("k", "v\"q"));
        assertTrue(stored.created());
        assertEquals(List.of(1L), stored.credential().raw().get("future"), "members a newer daemon adds are kept");
        vault.list(ListOptions.all().withNamespace("a b/c&d").withLimit(5));
        Deleted deleted = vault.delete("payments/alice", true);
        assertEquals(Boolean.TRUE, deleted.revoked());

        List<String> requests = socket.requests();
        assertEquals("GET /v1/credentials/ns/na%C3%AFve~x HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
                + "Connection: close\r\n\r\n", requests.get(0));
        assertEquals("PUT /v1/credentials/payments/alice HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
                + "Content-Type: application/json\r\nConnection: close\r\nContent-Length: 79\r\n\r\n"
                + "{\"provider\":\"idp\",\"labels\":{\"k\":\"v\\\"q\"},\"token\":{\"access_token\": \"a\" ,\"x\":[1]}}",
                requests.get(1), "the token goes in as given, trimmed");
        assertTrue(requests.get(2).startsWith("GET /v1/credentials?namespace=a%20b%2Fc%26d&limit=5 HTTP/1.1\r\n"),
                requests.get(2));
        assertTrue(requests.get(3).startsWith("DELETE /v1/credentials/payments/alice?force=true HTTP/1.1\r\n"),
                requests.get(3));
    }

    @Test
    void answersAreFramedAsRfc9112Says() {
        socket.answer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + json(200, "{\"status\":\"ok\"}"))
                .answer("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: , Chunked\r\n\r\n"
                        + "4;name=value\r\n{\"st\r\nb\r\natus\":\"ok\"}\r\n0\r\nTrailer-Field: x\r\n\r\n")
                .answer("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"status\":\"until close\"}")
                .answer("HTTP/1.0 200 OK\r\nContent-Length: 15\r\nContent-Length: 15\r\nX-Folded: a\r\n b\r\n\r\n"
                        + "{\"status\":\"10\"}");
        assertEquals("ok", vault.health().get("status"));
        assertEquals("ok", vault.health().get("status"));
        assertEquals("until close", vault.health().get("status"));
        assertEquals("10", vault.health().get("status"));
    }

    @Test
    void anAnswerCutShortOrNotHttpIsAConnectionFailure() {
        Map<String, String> answers = new LinkedHashMap<>();
        answers.put("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"status\"", "broke off 91 bytes before its end");
        answers.put("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{\"sta", "broke off inside a chunk");
        answers.put("SSH-2.0-OpenSSH\r\n", "not an HTTP/1.1 status line");
        answers.put("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "two different Content-Length");
        answers.put("", "closed the connection without an answer");
        answers.forEach((answer, why) -> socket.answer(answer));
        for (String why : answers.values()) {
            ConnectionFailedException failed = assertThrows(ConnectionFailedException.class, vault::health, why);
            assertEquals(socket.path, failed.socketPath());
            assertTrue(failed.getCause() instanceof java.io.IOException, String.valueOf(failed.getCause()));
            assertTrue(failed.getCause().getMessage().contains(why), failed.getCause().getMessage());
            assertEquals("cannot talk to the daemon on " + socket.path + ": " + failed.getCause().getMessage(),
                    failed.getMessage());
        }
    }

    /** A cause without a message is named by its class, not as "null". */
    @Test
    void aConnectionFailureWithoutAMessageNamesItsCause() {
        ConnectionFailedException failed = new ConnectionFailedException("/s.sock",
                new java.nio.channels.AsynchronousCloseException());
        assertEquals("cannot talk to the daemon on /s.sock: AsynchronousCloseException", failed.getMessage());
        assertEquals("cannot talk to the daemon on /s.sock: IOException",
                new ConnectionFailedException("/s.sock", new java.io.IOException()).getMessage());
    }

    /** Only {@code chunked}, alone, is a transfer coding the client reads; the field's lines are one list. */
    @Test
    void anyTransferCodingButChunkedIsRefused() {
        String body = "\r\n\r\n4\r\n{\"a\"\r\n3\r\n:1}\r\n0\r\n\r\n";
        List<String> refused = List.of(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked" + body,
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked" + body,
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip" + body,
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked" + body,
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity" + body,
                "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked" + body);
        refused.forEach(socket::answer);
        for (String answer : refused) {
            ConnectionFailedException failed = assertThrows(ConnectionFailedException.class, vault::health, answer);
            assertTrue(failed.getMessage().contains("transfer coding"), failed.getMessage());
        }
    }

    /** RFC 9112 section 6.3: both framings in one answer is a sign of smuggling; the client refuses it. */
    @Test
    void contentLengthWithTransferEncodingIsRefused() {
        socket.answer("HTTP/1.1 200 OK\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "7\r\n{\"a\":1}\r\n0\r\n\r\n")
                .answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\ncontent-length: 7\r\n\r\n"
                        + "7\r\n{\"a\":1}\r\n0\r\n\r\n");
        for (int i = 0; i < 2; i++) {
            ConnectionFailedException failed = assertThrows(ConnectionFailedException.class, vault::health);
            assertTrue(failed.getMessage().contains("both Content-Length and Transfer-Encoding"), failed.getMessage());
        }
    }

    @Test
    void foldedLinesTrailersAndSizeCountAgainstTheHeaderLimits() {
        String ok = "Content-Length: 2\r\n\r\n{}";
        socket.answer("HTTP/1.1 200 OK\r\nX-Folded: a\r\n" + " b\r\n".repeat(1000) + ok)
                .answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n"
                        + "T: x\r\n".repeat(1001) + "\r\n")
                .answer("HTTP/1.1 200 OK\r\n" + ("X-Big: " + "b".repeat(60000) + "\r\n").repeat(20) + ok)
                .answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n"
                        + ("T: " + "b".repeat(60000) + "\r\n").repeat(20) + "\r\n")
                .answer("HTTP/1.1 200 OK\r\n X-Indented: a\r\n" + ok)
                .answer("HTTP/1.1 200 OK\r\nX-Folded: a\r\n" + " b\r\n".repeat(900) + ok);
        for (String why : List.of("header lines", "trailer lines", "header bytes", "trailer bytes", "whitespace")) {
            ConnectionFailedException failed = assertThrows(ConnectionFailedException.class, vault::health, why);
            assertTrue(failed.getMessage().contains(why), failed.getMessage());
        }
        assertEquals(Map.of(), vault.health(), "900 folded lines are within the limit");
    }

    /** What the daemon sent is never copied into an exception's message (it may hold a token). */
    @Test
    void framingErrorsDoNotQuoteTheAnswer() {
        List<String> answers = List.of(
                "HTTP/1.1 2OO secret-status\r\n\r\n",
                "HTTP/1.1 200 OK\r\nsecret-header-without-colon\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: secret-length\r\n\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nsecret-chunk\r\n",
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: secret-coding\r\n\r\n");
        answers.forEach(socket::answer);
        for (String answer : answers) {
            ConnectionFailedException failed = assertThrows(ConnectionFailedException.class, vault::health, answer);
            assertFalse(failed.getMessage().contains("secret"), failed.getMessage());
        }
    }

    /** A 204, a 304 and a HEAD answer have no body, whatever bytes follow their head. */
    @Test
    void bytesAfterABodylessAnswerAreNotItsBody() throws Exception {
        socket.answer("HTTP/1.1 204 No Content\r\nTokenVault-Revoked: true\r\nContent-Length: 5\r\n\r\nhello")
                .answer("HTTP/1.1 204 No Content\r\nTokenVault-Revoked: false\r\n\r\nHTTP/1.1 200 OK\r\n\r\nx")
                .answer("HTTP/1.1 304 Not Modified\r\nTokenVault-Proxy: upstream\r\nContent-Length: 5\r\n\r\nhello")
                .answer("HTTP/1.1 304 Not Modified\r\nTokenVault-Proxy: upstream\r\n"
                        + "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
                .answer("HTTP/1.1 200 OK\r\nTokenVault-Proxy: upstream\r\nContent-Length: 5\r\n\r\nhello");
        assertEquals(Boolean.TRUE, vault.delete("payments/alice").revoked());
        assertEquals(Boolean.FALSE, vault.delete("payments/alice").revoked());
        for (String method : List.of("GET", "GET", "HEAD")) {
            try (UpstreamResponse answer = vault.call("payments/alice", method, "/x")) {
                assertEquals(method.equals("HEAD") ? 200 : 304, answer.status());
                assertEquals(0, answer.readAllBytes().length);
            }
        }
    }

    @Test
    void aStreamLineWithAHugeNumberIsUnexpectedAndEndsTheStream() {
        socket.answer(ScriptedSocket.Script.holding("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "e\r\n1e99999999999\n\r\n"));
        ChangeStream<Event> stream = vault.events();
        UnexpectedResponseException unexpected = assertThrows(UnexpectedResponseException.class, stream::hasNext);
        assertTrue(unexpected.getMessage().contains("number out of range"), unexpected.getMessage());
        assertFalse(stream.hasNext(), "the stream is closed");
    }

    /** The token text is parsed first: only a JSON object goes in, so nothing can be added around it. */
    @Test
    void aTokenThatIsNotOneJsonObjectIsRefusedBeforeSending() {
        for (String token : List.of("{\"a\":1},\"provider\":\"x\",\"y\":{}", "[1]", "{", "", "{} {}", "{\"a\": }",
                "\"{}\"")) {
            assertThrows(IllegalArgumentException.class, () -> vault.put("payments/alice", "idp", token), token);
        }
        assertThrows(IllegalArgumentException.class, () -> vault.put("payments/alice", "idp", (String) null));
        assertEquals(List.of(), socket.requests());
    }

    /** As the Go client: a zero or negative min_ttl is no min_ttl. */
    @Test
    void aMinTtlOfZeroOrLessIsLeftOut() {
        String token = "{\"access_token\":\"at\",\"token_type\":\"Bearer\"}";
        socket.answer(json(200, token)).answer(json(200, token)).answer(json(200, token));
        vault.token("payments/alice", Duration.ZERO);
        vault.token("payments/alice", Duration.ofSeconds(-3));
        vault.token("payments/alice", Duration.ofMillis(250));
        List<String> requests = socket.requests();
        assertTrue(requests.get(0).startsWith("GET /v1/credentials/payments/alice/token HTTP/1.1\r\n"), requests.get(0));
        assertTrue(requests.get(1).startsWith("GET /v1/credentials/payments/alice/token HTTP/1.1\r\n"), requests.get(1));
        assertTrue(requests.get(2).startsWith("GET /v1/credentials/payments/alice/token?min_ttl=0.25 HTTP/1.1\r\n"),
                requests.get(2));
    }

    @Test
    void aCallSendsRepeatedHeadersAndWaitsAsLongAsItsOptionsSay() {
        String upstream = "HTTP/1.1 200 OK\r\nTokenVault-Proxy: upstream\r\nContent-Length: 2\r\n\r\nok";
        socket.answer(upstream).answer(upstream).answer(upstream)
                .answer(ScriptedSocket.Script.holding("HTTP/1.1 200 OK\r\nTokenVault-Proxy: upstream\r\n"));
        vault.call("payments/alice", "GET", "/x", CallOptions.defaults().withHeader("X-Twice", "1")
                .withHeaders(Map.of("x-twice", List.of("2", "3")))).close();
        vault.call("payments/alice", "GET", "/y", Map.of("Accept", "text/plain")).close();
        vault.call("payments/alice", "POST", "https://api.example/z?k=v", CallOptions.defaults()
                .withHeader("TokenVault-Upstream-URL", "https://elsewhere.example/").withBody(new byte[] {'b'})).close();
        List<String> requests = socket.requests();
        assertEquals("GET /v1/credentials/payments/alice/proxy/x HTTP/1.1\r\nHost: localhost\r\nX-Twice: 1\r\n"
                + "x-twice: 2\r\nx-twice: 3\r\nConnection: close\r\n\r\n", requests.get(0));
        assertEquals("GET /v1/credentials/payments/alice/proxy/y HTTP/1.1\r\nHost: localhost\r\nAccept: text/plain\r\n"
                + "Connection: close\r\n\r\n", requests.get(1));
        assertEquals("POST /v1/credentials/payments/alice/proxy HTTP/1.1\r\nHost: localhost\r\n"
                + "TokenVault-Upstream-URL: https://api.example/z?k=v\r\nConnection: close\r\nContent-Length: 1\r\n\r\nb",
                requests.get(2), "the target's URL replaces one given as a header");

        long started = System.nanoTime();
        ConnectionFailedException failed = assertThrows(ConnectionFailedException.class, () -> vault.call(
                "payments/alice", "GET", "/slow", CallOptions.defaults().withTimeout(Duration.ofMillis(300))));
        assertTrue(failed.getMessage().contains("timed out after 0.3 s"), failed.getMessage());
        assertTrue(System.nanoTime() - started < 10_000_000_000L);
        assertEquals(CallOptions.DEFAULT_TIMEOUT, CallOptions.defaults().timeout());
        assertThrows(IllegalArgumentException.class, () -> CallOptions.defaults().withTimeout(Duration.ZERO));
        assertFalse(CallOptions.defaults().withHeader("X-Key", "secret").toString().contains("secret"));
    }

    /** A call's target may carry a key in its query: an error names the path only. */
    @Test
    void aRefusedCallTargetIsQuotedWithoutItsQuery() {
        for (String target : List.of("hello?key=secret-key", "/a b?key=secret-key", "/a\u00e9?key=secret-key")) {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> vault.call("payments/alice", "GET", target));
            assertFalse(refused.getMessage().contains("secret"), refused.getMessage());
            assertTrue(refused.getMessage().contains(target.substring(0, target.indexOf('?')) + "'"), refused.getMessage());
        }
    }

    @Test
    void aSilentDaemonTimesOut() {
        socket.answer(ScriptedSocket.Script.holding("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{"));
        TokenVaultClient quick = new TokenVaultClient(socket.path, Duration.ofMillis(300));
        long started = System.nanoTime();
        ConnectionFailedException failed = assertThrows(ConnectionFailedException.class, quick::health);
        long took = System.nanoTime() - started;
        assertTrue(failed.getCause() instanceof SocketTimeoutException, String.valueOf(failed.getCause()));
        assertTrue(failed.getMessage().contains("timed out after 0.3 s"), failed.getMessage());
        // Generous for a loaded machine, yet far below a hang.
        assertTrue(took >= 250_000_000L && took < 10_000_000_000L, took + " ns");
    }

    @Test
    void aStreamSkipsKeepAlivesAndReadsLinesAcrossChunks() {
        String line = "{\"type\":\"stored\",\"credential_id\":\"a/b\",\"at\":\"t\",\"status\":\"active\",\"generation\":1}\n";
        String head = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n";
        socket.answer(head + "1\r\n\n\r\n10\r\n" + line.substring(0, 16) + "\r\n" + Integer.toHexString(line.length() - 16)
                + "\r\n" + line.substring(16) + "\r\n2\r\n \n\r\n" + Integer.toHexString(line.length()) + "\r\n" + line
                + "\r\n0\r\n\r\n");
        List<Event> events = new ArrayList<>();
        try (ChangeStream<Event> stream = vault.events()) {
            stream.forEach(events::add);
        }
        assertEquals(2, events.size());
        assertEquals("stored", events.get(0).type());
        assertEquals(1L, events.get(1).generation());
        assertTrue(socket.requests().get(0).contains("Accept: application/x-ndjson\r\n"));
    }

    @Test
    void aClosedStreamGivesNothingMoreEvenWhatItAlreadyRead() {
        String line = "{\"type\":\"stored\",\"credential_id\":\"a/b\",\"at\":\"t\"}\n";
        socket.answer(ScriptedSocket.Script.holding("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                + Integer.toHexString(2 * line.length()) + "\r\n" + line + line + "\r\n"));
        ChangeStream<Event> stream = vault.events();
        assertEquals("stored", stream.next().type());
        stream.close();
        assertFalse(stream.hasNext());
    }

    @Test
    void aStreamThatBreaksOrSendsNonsenseThrows() {
        String head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        socket.answer(head + "5\r\n{\"typ").answer(head + "4\r\n[1]\n\r\n0\r\n\r\n")
                .answer(json(429, "{\"code\":\"too_many_streams\",\"status\":429}"));
        ChangeStream<Event> broken = vault.events();
        assertThrows(ConnectionFailedException.class, broken::hasNext);
        assertFalse(broken.hasNext(), "a stream that broke stays ended");
        ChangeStream<Event> nonsense = vault.events();
        assertThrows(UnexpectedResponseException.class, nonsense::hasNext);
        TooManyRequestsException refused = assertThrows(TooManyRequestsException.class, vault::events);
        assertEquals("too_many_streams", refused.code());
    }

    @Test
    void aDaemonRepeatingACursorIsNotFollowedForEver() {
        String page = "{\"items\":[" + CREDENTIAL + "],\"next_cursor\":\"c1\"}";
        socket.answer(json(200, page)).answer(json(200, page));
        List<String> seen = new ArrayList<>();
        UnexpectedResponseException repeated = assertThrows(UnexpectedResponseException.class,
                () -> vault.listAll().forEach(credential -> seen.add(credential.id())));
        assertTrue(repeated.getMessage().contains("same list cursor twice"), repeated.getMessage());
        assertEquals(List.of("payments/alice", "payments/alice"), seen);
    }
}
