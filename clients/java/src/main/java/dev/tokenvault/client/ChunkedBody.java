package dev.tokenvault.client;

import java.io.IOException;
import java.io.InputStream;
import java.net.ProtocolException;

/**
 * An answer's chunked body (RFC 9112 section 7.1), read as the caller goes: chunk extensions are
 * skipped, and trailers read within the limits of a head ({@link Answer#MAX_HEADERS} lines,
 * {@link Answer#MAX_HEAD_BYTES} bytes) and dropped. Closing it closes the connection.
 */
final class ChunkedBody extends InputStream {
    /** A chunk size line longer than this is refused: the size is at most 15 hexadecimal digits. */
    private static final int MAX_SIZE_LINE = 1024;

    private final Connection connection;
    private long left;
    private boolean startedChunk;
    private boolean ended;

    ChunkedBody(Connection connection) {
        this.connection = connection;
    }

    @Override
    public int read() throws IOException {
        if (!atData()) {
            return -1;
        }
        int c = connection.read();
        if (c < 0) {
            throw new ProtocolException("the answer broke off inside a chunk");
        }
        left--;
        return c;
    }

    @Override
    public int read(byte[] into, int offset, int length) throws IOException {
        if (length == 0) {
            return 0;
        }
        if (!atData()) {
            return -1;
        }
        int count = connection.read(into, offset, (int) Math.min(length, left));
        if (count < 0) {
            throw new ProtocolException("the answer broke off inside a chunk");
        }
        left -= count;
        return count;
    }

    /** Whether a byte of data is next, reading the framing up to it. */
    private boolean atData() throws IOException {
        if (ended) {
            return false;
        }
        if (left > 0) {
            return true;
        }
        if (startedChunk) {
            String end = connection.readLine(2);
            if (end == null || !end.isEmpty()) {
                throw new ProtocolException("a chunk is not followed by CRLF");
            }
        }
        String sizeLine = connection.readLine(MAX_SIZE_LINE);
        if (sizeLine == null) {
            throw new ProtocolException("the answer broke off before its last chunk");
        }
        int extension = sizeLine.indexOf(';');
        String size = (extension >= 0 ? sizeLine.substring(0, extension) : sizeLine).strip();
        if (!size.matches("[0-9a-fA-F]{1,15}")) {
            throw new ProtocolException("a chunk size line that does not start with a hexadecimal size (a line of "
                    + sizeLine.length() + " bytes)");
        }
        left = Long.parseLong(size, 16);
        startedChunk = true;
        if (left == 0) {
            new Answer.Fields(connection, "trailer").read();
            ended = true;
            return false;
        }
        return true;
    }

    @Override
    public void close() {
        connection.close();
    }
}
