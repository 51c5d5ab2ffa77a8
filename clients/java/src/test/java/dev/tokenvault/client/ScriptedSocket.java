package dev.tokenvault.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * A Unix socket that answers each connection with the next scripted bytes, for what the real
 * daemon never sends (interim answers, chunk extensions, a body cut short, silence). It records
 * each request as received, head and body.
 */
final class ScriptedSocket implements AutoCloseable {
    /** Bytes to send; {@code hold}: then keep the connection open, silent, until the socket closes. */
    record Script(byte[] answer, boolean hold) {
        static Script of(String answer) {
            return new Script(answer.getBytes(StandardCharsets.UTF_8), false);
        }

        static Script holding(String answer) {
            return new Script(answer.getBytes(StandardCharsets.UTF_8), true);
        }
    }

    final String path;
    private final ServerSocketChannel server;
    private final BlockingQueue<Script> scripts = new LinkedBlockingQueue<>();
    private final List<String> requests = new ArrayList<>();
    private final CountDownLatch closing = new CountDownLatch(1);
    private final Thread thread;

    ScriptedSocket(Path directory) throws IOException {
        Path socket = directory.resolve("scripted.sock");
        Files.deleteIfExists(socket);
        path = socket.toString();
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socket));
        thread = new Thread(this::serve, "scripted-socket");
        thread.setDaemon(true);
        thread.start();
    }

    ScriptedSocket answer(Script script) {
        scripts.add(script);
        return this;
    }

    ScriptedSocket answer(String answer) {
        return answer(Script.of(answer));
    }

    synchronized List<String> requests() {
        return List.copyOf(requests);
    }

    /**
     * Serves connection after connection until the socket closes. A connection the client drops
     * before the whole answer is written (it refused the answer early) is only that connection's end.
     */
    private void serve() {
        while (true) {
            SocketChannel connection;
            Script script;
            try {
                connection = server.accept();
                script = scripts.take();
            } catch (IOException | InterruptedException ended) {
                return;
            }
            try (connection) {
                String request = readRequest(connection);
                synchronized (this) {
                    requests.add(request);
                }
                ByteBuffer answer = ByteBuffer.wrap(script.answer());
                while (answer.hasRemaining()) {
                    connection.write(answer);
                }
                if (script.hold()) {
                    closing.await();
                }
            } catch (IOException dropped) {
                // The client closed its end: on to the next connection.
            } catch (InterruptedException ended) {
                return;
            }
        }
    }

    /** The request's head and body (by its Content-Length, or up to the last chunk). */
    private static String readRequest(SocketChannel connection) throws IOException {
        ByteArrayOutputStream received = new ByteArrayOutputStream();
        ByteBuffer one = ByteBuffer.allocate(1);
        int headEnd = -1;
        while (true) {
            one.clear();
            if (connection.read(one) < 0) {
                break;
            }
            received.write(one.get(0));
            String text = received.toString(StandardCharsets.ISO_8859_1);
            if (headEnd < 0 && text.endsWith("\r\n\r\n")) {
                headEnd = text.length();
                String head = text.toLowerCase(Locale.ROOT);
                int length = head.indexOf("content-length: ");
                if (length >= 0) {
                    int end = head.indexOf("\r\n", length);
                    int left = Integer.parseInt(head.substring(length + 16, end).trim());
                    ByteBuffer body = ByteBuffer.allocate(left);
                    while (body.hasRemaining() && connection.read(body) >= 0) {
                        // reading
                    }
                    received.write(body.array(), 0, body.position());
                    break;
                }
                if (!head.contains("transfer-encoding: chunked")) {
                    break;
                }
            } else if (headEnd >= 0 && text.endsWith("\r\n0\r\n\r\n")) {
                break;
            }
        }
        return received.toString(StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws IOException {
        closing.countDown();
        server.close();
        thread.interrupt();
    }
}
