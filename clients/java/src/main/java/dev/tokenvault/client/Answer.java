package dev.tokenvault.client;

import java.io.IOException;
import java.io.InputStream;
import java.net.ProtocolException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * An HTTP/1.1 answer read from a {@link Connection}: the status line and headers now, the body as
 * an {@code InputStream} framed as RFC 9112 section 6.3 says (chunked, {@code Content-Length}, or
 * until the daemon closes), read as the caller goes. Interim 1xx answers are skipped. Closing the
 * answer or its body closes the connection.
 *
 * <p>What the daemon sent is never quoted in an error's message (an answer may hold a token): an
 * error says what was wrong and where, by lengths and counts.
 */
final class Answer implements AutoCloseable {
    static final int MAX_LINE = 65536;
    /** At most this many field lines, folded continuation lines included, in a head, and as many in trailers. */
    static final int MAX_HEADERS = 1000;
    /** At most this many bytes in a head (its interim answers included), and as many in trailers. */
    static final int MAX_HEAD_BYTES = 1 << 20;

    final int status;
    final String reason;
    /** The headers in the order received, names as sent. */
    final List<Map.Entry<String, String>> headers;
    final InputStream body;
    private final Connection connection;

    private Answer(Connection connection, boolean http10, int status, String reason,
            List<Map.Entry<String, String>> headers, String method) throws IOException {
        this.connection = connection;
        this.status = status;
        this.reason = reason;
        this.headers = Collections.unmodifiableList(headers);
        this.body = frame(method, http10);
    }

    /** Reads the head of the answer to a {@code method} request. */
    static Answer read(Connection connection, String method) throws IOException {
        Fields head = new Fields(connection, "header");
        while (true) {
            String statusLine = head.line();
            if (statusLine == null) {
                throw new ProtocolException("the daemon closed the connection without an answer");
            }
            String[] parts = statusLine.split(" ", 3);
            if (parts.length < 2 || !parts[0].matches("HTTP/1\\.[0-9]") || !parts[1].matches("[0-9]{3}")) {
                throw new ProtocolException("not an HTTP/1.1 status line (a line of " + statusLine.length() + " bytes)");
            }
            int status = Integer.parseInt(parts[1]);
            List<Map.Entry<String, String>> headers = head.read();
            if (status >= 100 && status < 200 && status != 101) {
                continue; // 100 Continue, 103 Early Hints: the answer follows
            }
            return new Answer(connection, parts[0].equals("HTTP/1.0"), status, parts.length > 2 ? parts[2] : "",
                    headers, method);
        }
    }

    /** The first header named {@code name} (in any case), or {@code null}. */
    String header(String name) {
        return header(headers, name);
    }

    static String header(List<Map.Entry<String, String>> headers, String name) {
        for (Map.Entry<String, String> header : headers) {
            if (header.getKey().equalsIgnoreCase(name)) {
                return header.getValue();
            }
        }
        return null;
    }

    /** The whole body (the connection is closed after it). */
    byte[] readBody() throws IOException {
        try (InputStream in = body) {
            return in.readAllBytes();
        }
    }

    /** The body up to {@code max} bytes. */
    byte[] readBody(int max) throws IOException {
        try (InputStream in = body) {
            return in.readNBytes(max);
        }
    }

    /** From now on each read of the body may wait {@code timeout} ({@code null}: for ever). */
    void timeout(Duration timeout) {
        connection.timeout(timeout);
    }

    @Override
    public void close() {
        connection.close();
    }

    /**
     * Reads a head's header section or a chunked body's trailer section: field lines up to the
     * empty line, an obsolete folded line joined to the field before it. One instance reads a whole
     * head, its interim answers included, so {@link #MAX_HEADERS} lines and {@link #MAX_HEAD_BYTES}
     * bytes bound all of it.
     */
    static final class Fields {
        private final Connection connection;
        private final String kind;
        private int lines;
        private long bytes;

        /** {@code kind}: {@code header} or {@code trailer}, as errors name them. */
        Fields(Connection connection, String kind) {
            this.connection = connection;
            this.kind = kind;
        }

        /** The next line, counted against the size limit; {@code null} at the end. */
        String line() throws IOException {
            String line = connection.readLine(MAX_LINE);
            if (line != null) {
                bytes += line.length() + 2;
                if (bytes > MAX_HEAD_BYTES) {
                    throw new ProtocolException("more than " + MAX_HEAD_BYTES + " " + kind + " bytes");
                }
            }
            return line;
        }

        /**
         * The fields up to the empty line. The end of the connection before it is an error, but
         * for trailers, which a chunked body may end without.
         */
        List<Map.Entry<String, String>> read() throws IOException {
            List<Map.Entry<String, String>> fields = new ArrayList<>();
            String name = null;
            StringBuilder value = new StringBuilder();
            while (true) {
                String line = line();
                if (line == null && kind.equals("trailer")) {
                    line = "";
                } else if (line == null) {
                    throw new ProtocolException("the answer broke off in its " + kind + "s");
                }
                if (line.isEmpty()) {
                    if (name != null) {
                        fields.add(Map.entry(name, value.toString()));
                    }
                    return fields;
                }
                if (++lines > MAX_HEADERS) {
                    throw new ProtocolException("more than " + MAX_HEADERS + " " + kind + " lines");
                }
                if (line.charAt(0) == ' ' || line.charAt(0) == '\t') {
                    if (name == null) {
                        throw new ProtocolException("the first " + kind + " line starts with whitespace");
                    }
                    // An obsolete folded line continues the previous field's value.
                    value.append(' ').append(line.strip());
                    continue;
                }
                int colon = line.indexOf(':');
                if (colon <= 0) {
                    throw new ProtocolException(kind + " line " + lines + " has no name and colon (a line of "
                            + line.length() + " bytes)");
                }
                if (name != null) {
                    fields.add(Map.entry(name, value.toString()));
                }
                name = line.substring(0, colon).strip();
                value.setLength(0);
                value.append(line.substring(colon + 1).strip());
            }
        }
    }

    private InputStream frame(String method, boolean http10) throws IOException {
        if (method.equals("HEAD") || status == 204 || status == 304 || status == 101) {
            return new FixedBody(0);
        }
        List<String> codings = new ArrayList<>();
        boolean transferEncoding = false;
        boolean contentLength = false;
        for (Map.Entry<String, String> header : headers) {
            if (header.getKey().equalsIgnoreCase("Transfer-Encoding")) {
                // Every field line of it is one list (RFC 9110 section 5.3); empty elements count for nothing.
                transferEncoding = true;
                for (String coding : header.getValue().split(",")) {
                    if (!coding.isBlank()) {
                        codings.add(coding.strip().toLowerCase(Locale.ROOT));
                    }
                }
            }
            contentLength |= header.getKey().equalsIgnoreCase("Content-Length");
        }
        if (transferEncoding) {
            // RFC 9112 section 6.3: Transfer-Encoding would win, but both at once is what request
            // smuggling looks like ("ought to be handled as an error"), and the daemon never sends it.
            if (contentLength) {
                throw new ProtocolException("an answer with both Content-Length and Transfer-Encoding");
            }
            if (http10) {
                throw new ProtocolException("an HTTP/1.0 answer with a transfer coding");
            }
            if (!codings.equals(List.of("chunked"))) {
                throw new ProtocolException("a transfer coding other than chunked alone (" + codings.size()
                        + " codings): the client reads no other");
            }
            return new ChunkedBody(connection);
        }
        long length = -1;
        for (Map.Entry<String, String> header : headers) {
            if (header.getKey().equalsIgnoreCase("Content-Length")) {
                for (String value : header.getValue().split(",", -1)) {
                    if (!value.strip().matches("[0-9]{1,18}")) {
                        throw new ProtocolException("a Content-Length that is not a number (" + value.length() + " bytes)");
                    }
                    long parsed = Long.parseLong(value.strip());
                    if (length >= 0 && parsed != length) {
                        throw new ProtocolException("two different Content-Length values");
                    }
                    length = parsed;
                }
            }
        }
        return length >= 0 ? new FixedBody(length) : new RestBody();
    }

    /** A body of a known length. */
    private final class FixedBody extends InputStream {
        private long left;

        FixedBody(long length) {
            this.left = length;
        }

        @Override
        public int read() throws IOException {
            if (left == 0) {
                return -1;
            }
            int c = connection.read();
            if (c < 0) {
                throw new ProtocolException("the answer broke off " + left + " bytes before its end");
            }
            left--;
            return c;
        }

        @Override
        public int read(byte[] into, int offset, int length) throws IOException {
            if (left == 0) {
                return length == 0 ? 0 : -1;
            }
            int count = connection.read(into, offset, (int) Math.min(length, left));
            if (count < 0) {
                throw new ProtocolException("the answer broke off " + left + " bytes before its end");
            }
            left -= count;
            return count;
        }

        @Override
        public void close() {
            connection.close();
        }
    }

    /** A body that lasts until the daemon closes the connection. */
    private final class RestBody extends InputStream {
        @Override
        public int read() throws IOException {
            return connection.read();
        }

        @Override
        public int read(byte[] into, int offset, int length) throws IOException {
            return connection.read(into, offset, length);
        }

        @Override
        public void close() {
            connection.close();
        }
    }
}
