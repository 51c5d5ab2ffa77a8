/// One answer as the connection handler will write it (it adds `Content-Length` unless given).
/// Kept free of NIO types so the provider logic can be read, and reasoned about, on its own.
struct HTTPReply: Sendable {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    static func json(_ status: Int, _ value: JSONText, headers: [(String, String)] = []) -> HTTPReply {
        HTTPReply(
            status: status,
            headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")] + headers,
            body: value.bytes)
    }

    static func text(_ status: Int, contentType: String, _ body: String) -> HTTPReply {
        HTTPReply(status: status, headers: [("Content-Type", contentType)], body: Array(body.utf8))
    }
}

/// What the connection does with a request once the provider has looked at it.
enum ConnectionAction: Sendable {
    case reply(HTTPReply)
    /// Close the connection without answering.
    case drop
    /// Wait, then ask the provider again (`ProviderCore.serveAfterDelay`) and write its answer.
    case delay(seconds: Double)
    /// Write this answer (already decided: the tokens rotated when the request arrived) after a wait.
    case replyLater(HTTPReply, seconds: Double)
}
