package dev.tokenvault.client;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * HTTP/1.1 over the daemon's Unix socket: the one place a request is sent. One connection per
 * request, closed after its answer: a Unix socket connects in microseconds, and with nothing kept
 * between calls a client is safe to share between threads.
 */
final class Transport {
    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
    private static final Pattern TARGET = Pattern.compile("/[\\x21-\\x7e]*");
    private static final int CHUNK = 65536;

    final String socketPath;
    final Duration timeout;

    Transport(String socketPath, Duration timeout) {
        this.socketPath = socketPath;
        this.timeout = timeout;
    }

    /** A whole answer: status, headers and body. */
    record Reply(int status, List<Map.Entry<String, String>> headers, byte[] body) {
        String header(String name) {
            return Answer.header(headers, name);
        }

        /**
         * The body as {@code build} makes it of the JSON object it holds; a body that is not JSON,
         * or a document without what the API promises, is an {@link UnexpectedResponseException}.
         */
        <T> T decode(Function<Document, T> build) {
            Object parsed;
            try {
                parsed = Json.parse(body);
            } catch (Json.MalformedException error) {
                throw new UnexpectedResponseException(status, "the body is not JSON: " + error.getMessage());
            }
            try {
                return build.apply(Document.of(parsed));
            } catch (Document.Missing error) {
                throw new UnexpectedResponseException(status, "the document lacks what the API promises: "
                        + error.getMessage());
            }
        }
    }

    /** {@code /v1/credentials/{namespace}/{name}{suffix}}, each part percent-encoded. */
    static String credentialPath(String credentialId, String suffix) {
        String[] parts = credentialId == null ? new String[0] : credentialId.split("/", -1);
        if (parts.length != 2) {
            throw notAnId(credentialId);
        }
        for (String part : parts) {
            if (part.isEmpty() || part.equals(".") || part.equals("..")) {
                throw notAnId(credentialId);
            }
        }
        return "/v1/credentials/" + quote(parts[0]) + "/" + quote(parts[1]) + suffix;
    }

    private static IllegalArgumentException notAnId(String credentialId) {
        return new IllegalArgumentException("'" + credentialId + "' is not a credential id (namespace/name)");
    }

    /** {@code path} with the query's members whose value is not {@code null}, percent-encoded. */
    static String target(String path, Map<String, String> query) {
        StringBuilder target = new StringBuilder(path);
        char separator = '?';
        for (Map.Entry<String, String> member : query.entrySet()) {
            if (member.getValue() != null) {
                target.append(separator).append(quote(member.getKey())).append('=').append(quote(member.getValue()));
                separator = '&';
            }
        }
        return target.toString();
    }

    /** Percent-encodes every byte of the UTF-8 text but the unreserved {@code A-Z a-z 0-9 - . _ ~}. */
    static String quote(String text) {
        StringBuilder out = new StringBuilder();
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                    || c == '-' || c == '.' || c == '_' || c == '~') {
                out.append((char) c);
            } else {
                out.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            }
        }
        return out.toString();
    }

    /**
     * Sends a request and returns the answer with its body unread (the caller closes it).
     * {@code headers}: field lines in order, a name may repeat. {@code body}: {@code null}, a
     * {@code byte[]} (sent with its length) or an {@code InputStream} (sent chunked).
     * {@code timeout} bounds each connect, write and read.
     */
    Answer open(String method, String target, List<Map.Entry<String, String>> headers, Object body,
            Duration timeout) {
        if (!TOKEN.matcher(method).matches()) {
            throw new IllegalArgumentException("'" + abbreviate(method) + "' is not an HTTP method");
        }
        if (!TARGET.matcher(target).matches()) {
            // The query is left out: it may carry a key.
            throw new IllegalArgumentException("'" + abbreviate(pathOf(target)) + "' is not a request target:"
                    + " a path starting with /, in printable ASCII (percent-encode the rest)");
        }
        StringBuilder head = new StringBuilder(method).append(' ').append(target).append(" HTTP/1.1\r\n");
        StringBuilder given = new StringBuilder();
        boolean host = false;
        boolean connectionGiven = false;
        for (Map.Entry<String, String> header : headers) {
            String name = header.getKey();
            String value = header.getValue();
            if (name == null || !TOKEN.matcher(name).matches() || value == null || !fieldValue(value)) {
                throw new IllegalArgumentException("header '" + abbreviate(String.valueOf(name))
                        + "' has a name that is not a token, or a line break, NUL or non-Latin-1 text in its value");
            }
            String lower = name.toLowerCase(Locale.ROOT);
            if (lower.equals("content-length") || lower.equals("transfer-encoding")) {
                throw new IllegalArgumentException(name + " is the client's to set: it frames the body");
            }
            host |= lower.equals("host");
            connectionGiven |= lower.equals("connection");
            given.append(name).append(": ").append(value).append("\r\n");
        }
        if (!host) {
            head.append("Host: localhost\r\n");
        }
        head.append(given);
        if (!connectionGiven) {
            head.append("Connection: close\r\n"); // one request per connection
        }
        boolean chunked = body instanceof InputStream;
        if (body instanceof byte[]) {
            head.append("Content-Length: ").append(((byte[]) body).length).append("\r\n");
        } else if (chunked) {
            head.append("Transfer-Encoding: chunked\r\n");
        } else if (body != null) {
            throw new IllegalArgumentException("a body is a byte[] or an InputStream");
        } else if (method.equals("POST") || method.equals("PUT") || method.equals("PATCH")) {
            head.append("Content-Length: 0\r\n");
        }
        head.append("\r\n");

        Connection connection = null;
        try {
            connection = Connection.open(socketPath, timeout);
            connection.write(Connection.ascii(head.toString()));
            if (body instanceof byte[]) {
                connection.write((byte[]) body);
            } else if (chunked) {
                writeChunked(connection, (InputStream) body);
            }
            return Answer.read(connection, method);
        } catch (IOException error) {
            if (connection != null) {
                connection.close();
            }
            throw new ConnectionFailedException(socketPath, error);
        } catch (RuntimeException error) {
            if (connection != null) {
                connection.close();
            }
            throw error;
        }
    }

    /**
     * A request whose answer is read whole; a status outside {@code expect} throws the daemon's
     * problem. {@code json}: the request's body, JSON text already.
     */
    Reply send(String method, String path, Map<String, String> query, byte[] json, Set<Integer> expect,
            Duration timeout) {
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        headers.add(Map.entry("Accept", "application/json"));
        if (json != null) {
            headers.add(Map.entry("Content-Type", "application/json"));
        }
        Answer answer = open(method, target(path, query), headers, json, timeout);
        byte[] data;
        try {
            data = answer.readBody();
        } catch (IOException error) {
            throw new ConnectionFailedException(socketPath, error);
        } finally {
            answer.close();
        }
        if (!expect.contains(answer.status)) {
            throw ProblemException.fromAnswer(answer.status, answer.header("Content-Type"), data);
        }
        return new Reply(answer.status, answer.headers, data);
    }

    Reply send(String method, String path, Map<String, String> query, byte[] json, Set<Integer> expect) {
        return send(method, path, query, json, expect, timeout);
    }

    /**
     * The daemon's problem in an answer that is not the one asked for (read up to 1 MiB); the
     * connection is closed.
     */
    static ProblemException refuse(Answer answer) {
        try {
            return ProblemException.fromAnswer(answer.status, answer.header("Content-Type"), answer.readBody(1 << 20));
        } catch (IOException error) {
            return ProblemException.of(new Problem(answer.status, "http_" + answer.status, null,
                    "the answer broke off: " + error.getMessage(), null, null, null));
        } finally {
            answer.close();
        }
    }

    /**
     * An NDJSON answer as a {@link ChangeStream}, its request sent now. The timeout covers the
     * connect and the answer's head only: a stream then waits as long as the daemon is quiet.
     */
    <T> ChangeStream<T> stream(String path, Function<Document, T> decode) {
        Answer answer = open("GET", path, List.of(Map.entry("Accept", "application/x-ndjson")), null, timeout);
        if (answer.status != 200) {
            throw refuse(answer);
        }
        return new ChangeStream<>(answer, decode, socketPath);
    }

    private static void writeChunked(Connection connection, InputStream body) throws IOException {
        byte[] buffer = new byte[CHUNK];
        while (true) {
            int count = body.read(buffer);
            if (count < 0) {
                break;
            }
            if (count > 0) {
                connection.write(Connection.ascii(Integer.toHexString(count) + "\r\n"));
                connection.write(buffer, 0, count);
                connection.write(Connection.ascii("\r\n"));
            }
        }
        connection.write(Connection.ascii("0\r\n\r\n"));
    }

    private static boolean fieldValue(String value) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '\r' || c == '\n' || c == '\0' || c > 0xff) {
                return false;
            }
        }
        return true;
    }

    /** {@code text} cut to 200 characters, for an error's message about the caller's own argument. */
    static String abbreviate(String text) {
        return text.length() > 200 ? text.substring(0, 200) + "…" : text;
    }

    /** A target or URL without its query and fragment, which may carry a key: what an error may show. */
    static String pathOf(String target) {
        int end = target.length();
        for (char c : new char[] {'?', '#'}) {
            int at = target.indexOf(c);
            if (at >= 0 && at < end) {
                end = at;
            }
        }
        return target.substring(0, end);
    }
}
