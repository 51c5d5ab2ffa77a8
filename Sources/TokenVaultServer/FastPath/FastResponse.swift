import HTTPTypes
import NIOCore
import NIOHTTP1

/// A whole HTTP/1.1 response, head and body, as the event loop's fast paths write it: the one
/// place their heads are made, with what every answer of the daemon carries (`Content-Type`,
/// `Content-Length`, `X-Request-Id`, `Date`, `Server`). The router's answers carry the same
/// fields, though not always in this order (its 404 names `X-Request-Id` before the length).
enum FastResponse {
    /// `status`: the status line's code and reason (`200 OK`). `headers`: further lines, each
    /// ending in CRLF.
    static func make(
        status: StaticString, contentType: StaticString, headers: String = "", body: ByteBuffer, requestID: String,
        serverName: String, allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var response = allocator.buffer(capacity: 256 + headers.utf8.count + body.readableBytes)
        response.writeStaticString("HTTP/1.1 ")
        response.writeStaticString(status)
        response.writeStaticString("\r\nContent-Type: ")
        response.writeStaticString(contentType)
        response.writeStaticString("\r\nContent-Length: ")
        response.writeString(String(body.readableBytes))
        response.writeStaticString("\r\n")
        response.writeString(headers)
        response.writeStaticString("X-Request-Id: ")
        response.writeString(requestID)
        response.writeStaticString("\r\nDate: ")
        response.writeString(HTTPDateHeader.now)
        response.writeStaticString("\r\nServer: ")
        response.writeString(serverName)
        response.writeStaticString("\r\n\r\n")
        response.writeImmutableBuffer(body)
        return response
    }
}
