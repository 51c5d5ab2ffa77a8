package dev.tokenvault.client;

import java.io.InputStream;
import java.time.Duration;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * What a {@link TokenVaultClient#call(String, String, String, CallOptions) call} through the proxy
 * sends beyond its method and target, and how long it may wait: headers (a name may repeat), a body
 * and the timeout of each connect, write and read (120 s, as in the Python client). Immutable:
 * {@code CallOptions.defaults().withHeader("Accept", "application/json").withBody(bytes)
 * .withTimeout(Duration.ofSeconds(10))}.
 */
public final class CallOptions {
    /** How long each wait of a call may take unless told: 120 s, as in the Python client. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(120);

    private static final CallOptions DEFAULTS = new CallOptions(List.of(), null, DEFAULT_TIMEOUT);

    private final List<Map.Entry<String, String>> headers;
    private final Object body;
    private final Duration timeout;

    private CallOptions(List<Map.Entry<String, String>> headers, Object body, Duration timeout) {
        this.headers = headers;
        this.body = body;
        this.timeout = timeout;
    }

    /** No headers, no body, a timeout of 120 s. */
    public static CallOptions defaults() {
        return DEFAULTS;
    }

    /**
     * These options with one more header line {@code name: value} (after those already given, so a
     * name may repeat). The name and value are checked when the call is made.
     */
    public CallOptions withHeader(String name, String value) {
        List<Map.Entry<String, String>> more = new ArrayList<>(headers);
        more.add(new AbstractMap.SimpleImmutableEntry<>(name, value));
        return new CallOptions(Collections.unmodifiableList(more), body, timeout);
    }

    /**
     * These options with a header line for each value of each name, in the map's order (as
     * {@code com.sun.net.httpserver.Headers} and {@code java.net.http.HttpHeaders.map()} hold them).
     */
    public CallOptions withHeaders(Map<String, ? extends Collection<String>> headers) {
        CallOptions options = this;
        for (Map.Entry<String, ? extends Collection<String>> header : headers.entrySet()) {
            for (String value : header.getValue()) {
                options = options.withHeader(header.getKey(), value);
            }
        }
        return options;
    }

    /** These options with a body of known length, sent with {@code Content-Length}. */
    public CallOptions withBody(byte[] body) {
        if (body == null) {
            throw new NullPointerException("body");
        }
        return new CallOptions(headers, body.clone(), timeout);
    }

    /** These options with a body sent chunked as it is read; a call reads it once. */
    public CallOptions withBody(InputStream body) {
        if (body == null) {
            throw new NullPointerException("body");
        }
        return new CallOptions(headers, body, timeout);
    }

    /** These options with another bound on each connect, write and read of the call (positive). */
    public CallOptions withTimeout(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("the timeout must be positive");
        }
        return new CallOptions(headers, body, timeout);
    }

    /** The header lines, in order. */
    public List<Map.Entry<String, String>> headers() {
        return headers;
    }

    /** Each wait's bound. */
    public Duration timeout() {
        return timeout;
    }

    /** {@code null}, a {@code byte[]} or an {@code InputStream}, as the transport sends them. */
    Object body() {
        return body;
    }

    @Override
    public String toString() {
        // Header values may hold a key: only the names are shown.
        List<String> names = new ArrayList<>();
        headers.forEach(header -> names.add(header.getKey()));
        return "CallOptions[headers=" + names + ", body=" + (body == null ? "none" : body instanceof byte[]
                ? ((byte[]) body).length + " bytes" : "streamed") + ", timeout=" + timeout + "]";
    }
}
