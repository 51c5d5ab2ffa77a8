package dev.tokenvault.client;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One connection to the daemon's Unix socket, used for one request: buffered reads, whole writes,
 * and a timeout on each operation.
 *
 * <p>A Unix-domain {@code SocketChannel} has no read timeout ({@code socket()} is not supported
 * for it, so no {@code SO_TIMEOUT}), so each connect, write and read that may block is watched: a
 * shared daemon thread closes the channel if the operation takes longer than the timeout, which
 * ends the blocked call with an {@code AsynchronousCloseException}, reported as a
 * {@link SocketTimeoutException}. The same close, from any thread, is how a stream is stopped.
 */
final class Connection implements AutoCloseable {
    private static final ScheduledThreadPoolExecutor WATCHDOG = watchdog();

    private final SocketChannel channel;
    private final byte[] buffer = new byte[16384];
    private int position;
    private int limit;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean timedOut;
    /** How long one operation may block; {@code null}: as long as it takes. */
    private volatile Duration timeout;

    private Connection(SocketChannel channel, Duration timeout) {
        this.channel = channel;
        this.timeout = timeout;
    }

    /** A connection to {@code socketPath}, each of whose operations may take up to {@code timeout}. */
    static Connection open(String socketPath, Duration timeout) throws IOException {
        SocketChannel channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        Connection connection = new Connection(channel, timeout);
        try {
            ScheduledFuture<?> watch = connection.arm();
            try {
                channel.connect(UnixDomainSocketAddress.of(socketPath));
            } finally {
                disarm(watch);
            }
        } catch (IOException error) {
            connection.close();
            throw connection.timedOut ? connection.timeoutError() : error;
        } catch (RuntimeException error) {
            connection.close();
            throw error;
        }
        return connection;
    }

    /** From now on each operation may block for {@code timeout} ({@code null}: for ever). */
    void timeout(Duration timeout) {
        this.timeout = timeout;
    }

    /** Writes all of {@code bytes}. */
    void write(byte[] bytes, int offset, int length) throws IOException {
        ByteBuffer data = ByteBuffer.wrap(bytes, offset, length);
        ScheduledFuture<?> watch = arm();
        try {
            while (data.hasRemaining()) {
                channel.write(data);
            }
        } catch (IOException error) {
            throw timedOut ? timeoutError() : error;
        } finally {
            disarm(watch);
        }
    }

    void write(byte[] bytes) throws IOException {
        write(bytes, 0, bytes.length);
    }

    /** The next byte, or -1 at the end of what the daemon sent. */
    int read() throws IOException {
        if (position == limit && !fill()) {
            return -1;
        }
        return buffer[position++] & 0xff;
    }

    /** Up to {@code length} bytes, at least one unless at the end (then -1). */
    int read(byte[] into, int offset, int length) throws IOException {
        if (length == 0) {
            return 0;
        }
        if (position == limit && !fill()) {
            return -1;
        }
        int count = Math.min(length, limit - position);
        System.arraycopy(buffer, position, into, offset, count);
        position += count;
        return count;
    }

    /**
     * A line of the answer's head or of a chunked body's framing, without its CRLF (or bare LF),
     * as ISO-8859-1 text; {@code null} at the end before any byte. A line longer than {@code max}
     * bytes is an error: the daemon's never are.
     */
    String readLine(int max) throws IOException {
        StringBuilder line = new StringBuilder();
        while (true) {
            int c = read();
            if (c < 0) {
                if (line.length() == 0) {
                    return null;
                }
                throw new IOException("the answer broke off inside a line");
            }
            if (c == '\n') {
                int end = line.length();
                if (end > 0 && line.charAt(end - 1) == '\r') {
                    line.setLength(end - 1);
                }
                return line.toString();
            }
            if (line.length() >= max) {
                throw new IOException("a line of the answer's framing is longer than " + max + " bytes");
            }
            line.append((char) c);
        }
    }

    static byte[] ascii(String text) {
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }

    /** Closes the channel; safe from any thread and more than once. A blocked read then ends. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // Nothing is left to release.
            }
        }
    }

    private boolean fill() throws IOException {
        ScheduledFuture<?> watch = arm();
        try {
            int count;
            do {
                count = channel.read(ByteBuffer.wrap(buffer));
            } while (count == 0);
            if (count < 0) {
                return false;
            }
            position = 0;
            limit = count;
            return true;
        } catch (IOException error) {
            // AsynchronousCloseException: closed by the watchdog, or by the caller (a stream's close).
            throw timedOut ? timeoutError() : error;
        } finally {
            disarm(watch);
        }
    }

    private ScheduledFuture<?> arm() {
        Duration limit = timeout;
        if (limit == null) {
            return null;
        }
        long nanos;
        try {
            nanos = Math.max(1, limit.toNanos());
        } catch (ArithmeticException centuries) {
            nanos = Long.MAX_VALUE;
        }
        return WATCHDOG.schedule(() -> {
            timedOut = true;
            close();
        }, nanos, TimeUnit.NANOSECONDS);
    }

    private static void disarm(ScheduledFuture<?> watch) {
        if (watch != null) {
            watch.cancel(false);
        }
    }

    private SocketTimeoutException timeoutError() {
        Duration limit = timeout;
        return new SocketTimeoutException(
                "timed out after " + (limit == null ? "the timeout" : TokenVaultClient.seconds(limit) + " s"));
    }

    private static ScheduledThreadPoolExecutor watchdog() {
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, work -> {
            Thread thread = new Thread(work, "tokenvault-client-timeouts");
            thread.setDaemon(true);
            return thread;
        });
        executor.setRemoveOnCancelPolicy(true);
        return executor;
    }
}
