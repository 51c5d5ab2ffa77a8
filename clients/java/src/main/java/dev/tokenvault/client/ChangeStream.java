package dev.tokenvault.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.function.Function;

/**
 * The daemon's NDJSON lines ({@link TokenVaultClient#watch}, {@link TokenVaultClient#events}),
 * decoded one at a time as they arrive. The request is made when the stream is created, so nothing
 * that happens after that is missed.
 *
 * <p>{@link #hasNext()} waits for the next line, as long as the daemon is quiet; it answers
 * {@code false} when the daemon ends the stream (the watched credential was deleted, the daemon
 * stopped) or when {@link #close()} ended it, which is safe from another thread than the one
 * waiting. A stream is its own iterator, for one pass: {@code for (Credential c : stream)}, in a
 * try-with-resources block. Empty keep-alive lines are skipped.
 */
public final class ChangeStream<T> implements Iterator<T>, Iterable<T>, AutoCloseable {
    private static final int MAX_LINE = 16 << 20;

    private final Answer answer;
    private final Function<Document, T> decode;
    private final String socketPath;
    private volatile boolean closed;
    private boolean ended;
    private T next;

    ChangeStream(Answer answer, Function<Document, T> decode, String socketPath) {
        this.answer = answer;
        this.decode = decode;
        this.socketPath = socketPath;
        answer.timeout(null);
    }

    /**
     * Whether another item came, waiting for it. Throws {@link ConnectionFailedException} when the
     * connection broke (not when it was closed), {@link UnexpectedResponseException} for a line that
     * is not what the API promises; the stream is closed then.
     */
    @Override
    public boolean hasNext() {
        while (next == null && !ended) {
            if (closed) {
                ended = true; // what was already read stays unread after close()
                break;
            }
            byte[] line;
            try {
                line = readLine();
            } catch (IOException error) {
                if (closed) {
                    ended = true; // closed from another thread while this one read
                    break;
                }
                close();
                throw new ConnectionFailedException(socketPath, error);
            }
            if (line == null) {
                ended = true;
                close();
                break;
            }
            if (isBlank(line)) {
                continue;
            }
            try {
                next = decode.apply(Document.of(Json.parse(line)));
            } catch (Json.MalformedException | Document.Missing error) {
                close();
                throw new UnexpectedResponseException(200, "a stream line is not what the API promises: "
                        + error.getMessage());
            } catch (RuntimeException error) {
                close(); // whatever went wrong, the stream does not stay open behind it
                throw error;
            }
        }
        return next != null;
    }

    /** The next item, waiting for it; {@link NoSuchElementException} after the stream ended. */
    @Override
    public T next() {
        if (!hasNext()) {
            throw new NoSuchElementException("the stream ended");
        }
        T item = next;
        next = null;
        return item;
    }

    /** This stream, for a for-each loop: one pass only. */
    @Override
    public Iterator<T> iterator() {
        return this;
    }

    /** Ends the stream; safe from any thread (a thread waiting in {@link #hasNext()} then gets {@code false}). */
    @Override
    public void close() {
        closed = true;
        answer.close();
    }

    /** The next line without its line feed; {@code null} at the end. */
    private byte[] readLine() throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        while (true) {
            int c = answer.body.read();
            if (c < 0) {
                return line.size() == 0 ? null : line.toByteArray();
            }
            if (c == '\n') {
                return line.toByteArray();
            }
            if (line.size() >= MAX_LINE) {
                throw new IOException("a stream line is longer than " + MAX_LINE + " bytes");
            }
            line.write(c);
        }
    }

    private static boolean isBlank(byte[] line) {
        for (byte b : line) {
            if (b != ' ' && b != '\t' && b != '\r') {
                return false;
            }
        }
        return true;
    }
}
