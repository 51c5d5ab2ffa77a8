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

    /// A response's head with `fields` as they are (a proxied answer's, `ProxyFastCall`): the
    /// status line, a line per field, then what every answer of the daemon carries (in place of
    /// any `X-Request-Id`, `Date` or `Server` among `fields`), and the blank line. Field values
    /// never hold CR or LF (`HTTPField` replaces them), so nothing in them can end the head early.
    static func head(
        status: HTTPResponse.Status, fields: HTTPFields, requestID: String, serverName: String,
        allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var head = allocator.buffer(capacity: 160 + fields.count * 48)
        head.writeStaticString("HTTP/1.1 ")
        head.writeString(String(status.code))
        head.writeStaticString(" ")
        // A status made from a code alone has no phrase; NIO's table has the standard ones (the
        // router's answers carry them), and none for a code it does not know.
        head.writeString(
            status.reasonPhrase.isEmpty
                ? HTTPResponseStatus(statusCode: status.code).reasonPhrase : status.reasonPhrase)
        head.writeStaticString("\r\n")
        for field in fields where field.name != .requestID && field.name != .date && field.name != .server {
            head.writeString(field.name.rawName)
            head.writeStaticString(": ")
            head.writeString(field.value)
            head.writeStaticString("\r\n")
        }
        head.writeStaticString("X-Request-Id: ")
        head.writeString(requestID)
        head.writeStaticString("\r\nDate: ")
        head.writeString(HTTPDateHeader.now)
        head.writeStaticString("\r\nServer: ")
        head.writeString(serverName)
        head.writeStaticString("\r\n\r\n")
        return head
    }
}
