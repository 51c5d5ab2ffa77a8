package dev.tokenvault.client;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The upstream's answer to a call through the daemon's proxy ({@link TokenVaultClient#call}):
 * its status, headers and body, the body still streaming from the daemon. Read the body
 * ({@link #body()}, {@link #readAllBytes()}) and close the answer, in a try-with-resources block.
 */
public final class UpstreamResponse implements AutoCloseable {
    private final Answer answer;
    private final List<Map.Entry<String, String>> headers;
    private final boolean refreshed;
    private final String socketPath;

    UpstreamResponse(Answer answer, boolean refreshed, String socketPath) {
        this.answer = answer;
        this.socketPath = socketPath;
        List<Map.Entry<String, String>> kept = new ArrayList<>();
        for (Map.Entry<String, String> header : answer.headers) {
            if (!header.getKey().equalsIgnoreCase("TokenVault-Proxy")) {
                kept.add(header);
            }
        }
        this.headers = Collections.unmodifiableList(kept);
        this.refreshed = refreshed;
    }

    /** The upstream's status, whatever it is (a 3xx is never followed, a 401 comes back as it came). */
    public int status() {
        return answer.status;
    }

    public String reason() {
        return answer.reason;
    }

    /** The upstream's headers, in order, less those the daemon drops (hop-by-hop, {@code Set-Cookie}, …). */
    public List<Map.Entry<String, String>> headers() {
        return headers;
    }

    /** The first header named {@code name} (in any case), or {@code null}. */
    public String header(String name) {
        return Answer.header(headers, name);
    }

    /** The token was refused once, refreshed, and the call sent again. */
    public boolean refreshed() {
        return refreshed;
    }

    /** The body as it arrives; closing it closes the answer. */
    public InputStream body() {
        return answer.body;
    }

    /** The rest of the body, then the answer is closed. */
    public byte[] readAllBytes() {
        try {
            return answer.readBody();
        } catch (IOException error) {
            throw new ConnectionFailedException(socketPath, error);
        }
    }

    @Override
    public void close() {
        answer.close();
    }

    @Override
    public String toString() {
        return "UpstreamResponse[status=" + answer.status + ", refreshed=" + refreshed + "]";
    }
}
