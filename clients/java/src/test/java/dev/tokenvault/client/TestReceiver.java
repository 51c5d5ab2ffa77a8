package dev.tokenvault.client;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/** A loopback webhook endpoint: keeps each delivery's headers and body as they arrived. */
final class TestReceiver implements AutoCloseable {
    /** One delivery: headers (names lower-cased, first value) and the raw body. */
    record Delivery(Map<String, String> headers, byte[] body) {
    }

    private final HttpServer server;
    private final ExecutorService executor;
    final String url;
    private final List<Delivery> deliveries = new ArrayList<>();

    TestReceiver() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        executor = Executors.newCachedThreadPool(work -> {
            Thread thread = new Thread(work, "test-receiver");
            thread.setDaemon(true);
            return thread;
        });
        server.setExecutor(executor);
        server.createContext("/hook", exchange -> {
            try (exchange) {
                byte[] body = exchange.getRequestBody().readAllBytes();
                Map<String, String> headers = new TreeMap<>();
                exchange.getRequestHeaders().forEach((name, values) -> headers.put(name.toLowerCase(), values.get(0)));
                synchronized (this) {
                    deliveries.add(new Delivery(headers, body));
                    notifyAll();
                }
                exchange.sendResponseHeaders(204, -1);
            }
        });
        server.start();
        url = "http://127.0.0.1:" + server.getAddress().getPort() + "/hook";
    }

    /** The first delivery whose body's {@code type} is {@code type}, waiting up to {@code timeout} for it. */
    synchronized Delivery waitFor(String type, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            for (Delivery delivery : deliveries) {
                Object event = Json.parse(delivery.body());
                if (event instanceof Map && type.equals(((Map<?, ?>) event).get("type"))) {
                    return delivery;
                }
            }
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw new AssertionError("no " + type + " delivery within " + timeout);
            }
            wait(Math.max(1, left / 1_000_000));
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
