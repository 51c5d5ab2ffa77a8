package dev.tokenvault.client;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The real daemon for the tests, as clients/python/tests/daemon.py and clients/go/daemon_test.go
 * start it: {@code tokenvault serve} ({@link Repository#binary()}) on a fresh vault in a temporary
 * directory, with provider instances {@code oauth2} (no endpoints, as {@code make run} has) and
 * {@code idp} (the loopback {@link TestProvider}), and, given a receiver URL, a webhook endpoint
 * {@code receiver} whose secret {@code tokenvault webhooks secret} made; given an Authlib issuer,
 * instance {@code authlib} as well.
 */
final class TestDaemon implements AutoCloseable {
    final Path directory;
    final String socket;
    /** The secret of endpoint {@code receiver}, when the daemon has one. */
    final String webhookSecret;
    private final Process process;
    private final Path log;

    private TestDaemon(Path directory, String socket, String webhookSecret, Process process, Path log) {
        this.directory = directory;
        this.socket = socket;
        this.webhookSecret = webhookSecret;
        this.process = process;
        this.log = log;
    }

    static TestDaemon start(TestProvider provider) throws Exception {
        return start(provider, null);
    }

    static TestDaemon start(TestProvider provider, String webhookUrl) throws Exception {
        return start(provider, webhookUrl, null);
    }

    /**
     * As {@link #start(TestProvider, String)}, with, given an issuer, provider instance
     * {@code authlib} too: the {@link AuthlibServer} at that issuer, its endpoints discovered.
     */
    static TestDaemon start(TestProvider provider, String webhookUrl, String authlibIssuer) throws Exception {
        Path binary = Repository.binary();
        // Where nothing names a daemon and none was built (`mvn install` on a machine without
        // Swift), the daemon's tests are skipped; a TOKENVAULT_BIN that names none (what
        // scripts/test-java-client.sh sets) fails them.
        String named = System.getenv("TOKENVAULT_BIN");
        assumeTrue((named != null && !named.isEmpty()) || Files.exists(binary),
                "no daemon at " + binary + " and TOKENVAULT_BIN unset: `swift build` makes one");
        if (!Files.isExecutable(binary)) {
            throw new IllegalStateException("no tokenvault binary at " + binary
                    + ": run `swift build` (or `make test`), or set TOKENVAULT_BIN");
        }
        Path directory = Files.createTempDirectory("tv-java-");
        Path data = directory.resolve("data");
        String socket = directory.resolve("tv.sock").toString();
        Path secret = directory.resolve("client.secret");
        Files.createFile(secret, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(secret, "vault-secret");
        run(binary.toString(), "init", "--data-dir", data.toString());

        Map<String, Object> idp = new LinkedHashMap<>();
        idp.put("kind", "oauth2");
        idp.put("token_endpoint", provider.url + "/token");
        idp.put("client_id", "vault-client");
        idp.put("client_secret_file", secret.toString());
        idp.put("api_base_urls", List.of(provider.url + "/api"));
        idp.put("authorization_endpoint", provider.url + "/authorize");
        idp.put("device_authorization_endpoint", provider.url + "/device");
        idp.put("redirect_uris", List.of("https://app.example/cb"));
        Map<String, Object> config = new LinkedHashMap<>();
        // oauth2: what `make run` has without a configuration file (the README's examples use it).
        Map<String, Object> providers = new LinkedHashMap<>();
        providers.put("oauth2", Map.of("kind", "oauth2"));
        providers.put("idp", idp);
        if (authlibIssuer != null) {
            providers.put("authlib", Map.of("kind", "oauth2", "issuer", authlibIssuer, "client_id", "vault-client",
                    "client_secret_file", secret.toString()));
        }
        config.put("providers", providers);
        config.put("limits", Map.of("on_demand_refresh_seconds", 1));
        String webhookSecret = "";
        if (webhookUrl != null) {
            Path secretFile = directory.resolve("hook.whsec");
            run(binary.toString(), "webhooks", "secret", secretFile.toString());
            webhookSecret = Files.readString(secretFile).strip();
            config.put("webhooks", Map.of("endpoints",
                    Map.of("receiver", Map.of("url", webhookUrl, "secret_file", secretFile.toString()))));
        }
        Path configFile = directory.resolve("config.json");
        Files.writeString(configFile, Json.write(config));

        Path log = directory.resolve("daemon.log");
        ProcessBuilder builder = new ProcessBuilder(binary.toString(), "serve", "--data-dir", data.toString(),
                "--socket", socket);
        builder.environment().put("TOKENVAULT_CONFIG", configFile.toString());
        builder.environment().put("TOKENVAULT_LOG_LEVEL", "warning");
        builder.redirectErrorStream(true).redirectOutput(log.toFile());
        TestDaemon daemon = new TestDaemon(directory, socket, webhookSecret, builder.start(), log);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        // Connected, not only created: the socket file exists a moment before the daemon listens.
        while (!daemon.accepts()) {
            if (!daemon.process.isAlive() || System.nanoTime() > deadline) {
                String output = Files.readString(log);
                daemon.close();
                throw new IllegalStateException("the daemon did not start:\n" + output);
            }
            Thread.sleep(50);
        }
        return daemon;
    }

    private boolean accepts() {
        try (SocketChannel probe = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            probe.connect(UnixDomainSocketAddress.of(socket));
            return true;
        } catch (IOException notYet) {
            return false;
        }
    }

    /** SIGTERM, then SIGKILL after 30 s; returns when the daemon has ended. */
    void stop() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor();
            }
        }
    }

    String log() throws IOException {
        return Files.readString(log);
    }

    @Override
    public void close() throws IOException {
        try {
            stop();
        } catch (InterruptedException interrupted) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toArray(Path[]::new)) {
                Files.deleteIfExists(path);
            }
        }
    }

    private static void run(String... command) throws Exception {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (process.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed:\n" + output);
        }
    }
}
