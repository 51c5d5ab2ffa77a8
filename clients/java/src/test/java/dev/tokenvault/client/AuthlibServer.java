package dev.tokenvault.client;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.Comparator;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * scripts/authorization-server.py, an Authlib authorization server that is not ours, run with
 * the test virtual environment's Python on a free loopback port: the client credentials grant
 * and RFC 8693 token exchange for client {@code vault-client} / {@code vault-secret}, audiences
 * {@code api.example} and {@code reports.example} (others get {@code invalid_target}), and
 * {@code GET /test/exchanges}. Without the environment the calling test is skipped, saying why.
 */
final class AuthlibServer implements AutoCloseable {
    final String issuer;
    private final Process process;
    private final Path directory;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    private AuthlibServer(String issuer, Process process, Path directory) {
        this.issuer = issuer;
        this.process = process;
        this.directory = directory;
    }

    static AuthlibServer start() throws Exception {
        Path python = Repository.root().resolve(".build/test-venv/bin/python");
        assumeTrue(Files.isExecutable(python), "no Authlib virtual environment at " + python
                + ": `scripts/install-deps.sh --test` makes it; the token exchange tests need a real RFC 8693 server");
        Path script = Repository.root().resolve("scripts/authorization-server.py");
        Path directory = Files.createTempDirectory("tv-java-authlib-");
        Path out = directory.resolve("stdout");
        Path log = directory.resolve("stderr");
        // Files, not pipes: nobody reads the server's request log, which would fill a pipe and stall it.
        Process process = new ProcessBuilder(python.toString(), script.toString(), "--port", "0")
                .redirectOutput(out.toFile()).redirectError(log.toFile()).start();
        AuthlibServer server = null;
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            // It prints {"issuer": ...} once it listens.
            while (true) {
                String printed = Files.readString(out);
                int end = printed.indexOf('\n');
                if (end > 0) {
                    Object issuer = ((Map<?, ?>) Json.parse(printed.substring(0, end))).get("issuer");
                    server = new AuthlibServer((String) issuer, process, directory);
                    return server;
                }
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new IllegalStateException("the Authlib server did not start:\n" + Files.readString(log));
                }
                Thread.sleep(50);
            }
        } finally {
            if (server == null) {
                process.destroyForcibly().waitFor();
                delete(directory);
            }
        }
    }

    /**
     * A token response for this client from the server itself (client credentials grant,
     * {@code client_secret_basic}), as the app would have got it: what the test stores.
     */
    Map<String, Object> clientCredentials(String scope) throws Exception {
        String basic = Base64.getEncoder().encodeToString("vault-client:vault-secret".getBytes(StandardCharsets.UTF_8));
        HttpRequest request = HttpRequest.newBuilder(URI.create(issuer + "/token"))
                .header("Authorization", "Basic " + basic)
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString("grant_type=client_credentials&scope="
                        + scope.replace(" ", "+")))
                .timeout(Duration.ofSeconds(30)).build();
        return json(request);
    }

    /** {@code GET /test/exchanges}: {@code count} and the {@code requests} that got a token. */
    Map<String, Object> exchanges() throws Exception {
        return json(HttpRequest.newBuilder(URI.create(issuer + "/test/exchanges")).timeout(Duration.ofSeconds(30))
                .build());
    }

    private Map<String, Object> json(HttpRequest request) throws Exception {
        HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() != 200) {
            throw new IllegalStateException(request.uri() + " answered " + response.statusCode() + ": "
                    + response.body());
        }
        return Document.of(Json.parse(response.body())).raw();
    }

    @Override
    public void close() throws IOException {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
        } catch (InterruptedException interrupted) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        delete(directory);
    }

    private static void delete(Path directory) throws IOException {
        try (Stream<Path> paths = Files.walk(directory)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toArray(Path[]::new)) {
                Files.deleteIfExists(path);
            }
        }
    }
}
