package dev.tokenvault.client;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A loopback authorization server and API, as the Python and Go tests have: {@code /token}
 * answers refresh, code and device grants with fresh tokens (rotating the refresh token, refusing
 * a spent one), {@code /device} starts a device grant approved at once, {@code /api/...} answers
 * 200 to the current access token and 401 ({@code invalid_token}) to anything else,
 * {@code /api/echo} sends a POST's body back, {@code /api/redirect} redirects onto a daemon route.
 * Every token it issued is kept, so a test can search what the client showed for them.
 */
final class TestProvider implements AutoCloseable {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final HttpServer server;
    private final ExecutorService executor;
    final String url;
    private String access;
    private String refresh;
    private final List<String> issued = new ArrayList<>();
    private final List<Map<String, String>> apiCalls = new ArrayList<>();

    TestProvider() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        executor = Executors.newCachedThreadPool(work -> {
            Thread thread = new Thread(work, "test-provider");
            thread.setDaemon(true);
            return thread;
        });
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
        url = "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** A token response the provider now honours, as an SDK would hand it to the app. */
    synchronized Map<String, Object> issue() {
        access = "at-" + random();
        refresh = "rt-" + random();
        issued.add(access);
        issued.add(refresh);
        Map<String, Object> token = new LinkedHashMap<>();
        token.put("access_token", access);
        token.put("refresh_token", refresh);
        token.put("token_type", "Bearer");
        token.put("expires_in", 3600);
        return token;
    }

    synchronized String access() {
        return access;
    }

    synchronized String refreshToken() {
        return refresh;
    }

    synchronized List<String> issued() {
        return List.copyOf(issued);
    }

    synchronized List<Map<String, String>> apiCalls() {
        return List.copyOf(apiCalls);
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            byte[] body = exchange.getRequestBody().readAllBytes();
            String path = exchange.getRequestURI().getRawPath();
            String method = exchange.getRequestMethod();
            if (method.equals("POST") && path.equals("/device")) {
                // RFC 8628 section 3.2, approved at once: the first poll gets tokens.
                answer(exchange, 200, "application/json", Json.write(Map.of("device_code", "device-code-1",
                        "user_code", "WDJB-MJHT", "verification_uri", url + "/verify", "expires_in", 60,
                        "interval", 1)));
            } else if (method.equals("POST") && path.equals("/token")) {
                Map<String, String> form = form(new String(body, StandardCharsets.UTF_8));
                String grant = form.getOrDefault("grant_type", "");
                synchronized (this) {
                    if (grant.equals("refresh_token") && !form.getOrDefault("refresh_token", "").equals(refresh)) {
                        answer(exchange, 400, "application/json", "{\"error\":\"invalid_grant\"}");
                    } else if (!List.of("refresh_token", "authorization_code",
                            "urn:ietf:params:oauth:grant-type:device_code").contains(grant)) {
                        answer(exchange, 400, "application/json", "{\"error\":\"unsupported_grant_type\"}");
                    } else {
                        answer(exchange, 200, "application/json", Json.write(issue()));
                    }
                }
            } else if (path.equals("/api/redirect")) {
                // Off the allowed bases, onto a route of the daemon itself: never to be followed.
                exchange.getResponseHeaders().set("Location", "/v1/credentials/payments/alice/token");
                exchange.sendResponseHeaders(302, -1);
            } else if (path.startsWith("/api/")) {
                String authorization = exchange.getRequestHeaders().getFirst("Authorization");
                boolean authorized;
                synchronized (this) {
                    authorized = ("Bearer " + access).equals(authorization);
                    apiCalls.add(Map.of("path", path, "method", method, "authorized", String.valueOf(authorized)));
                }
                if (!authorized) {
                    exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer error=\"invalid_token\"");
                    answer(exchange, 401, "application/json", "{\"error\":\"invalid_token\"}");
                } else if (path.equals("/api/echo")) {
                    String type = exchange.getRequestHeaders().getFirst("Content-Type");
                    answer(exchange, 200, type == null ? "application/octet-stream" : type, body);
                } else {
                    answer(exchange, 200, "text/plain", "hello from the api\n");
                }
            } else {
                answer(exchange, 404, "application/json", "{}");
            }
        }
    }

    private static void answer(HttpExchange exchange, int status, String type, String body) throws IOException {
        answer(exchange, status, type, body.getBytes(StandardCharsets.UTF_8));
    }

    private static void answer(HttpExchange exchange, int status, String type, byte[] body) throws IOException {
        exchange.getResponseHeaders().set("Content-Type", type);
        exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        exchange.getResponseBody().write(body);
    }

    private static Map<String, String> form(String text) {
        Map<String, String> form = new LinkedHashMap<>();
        for (String pair : text.split("&")) {
            int equals = pair.indexOf('=');
            if (equals > 0) {
                form.put(URLDecoder.decode(pair.substring(0, equals), StandardCharsets.UTF_8),
                        URLDecoder.decode(pair.substring(equals + 1), StandardCharsets.UTF_8));
            }
        }
        return form;
    }

    private static String random() {
        byte[] bytes = new byte[12];
        RANDOM.nextBytes(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
