import Foundation
import Hummingbird
import TokenVaultCore

/// An RFC 9457 `application/problem+json` error with a stable `code`. The `detail` comes from
/// a `VaultError` message or a fixed text: never a token, never a statement argument.
public struct ProblemDetails: HTTPResponseError, Encodable, Sendable {
    public let status: HTTPResponse.Status
    public let code: VaultError.Code
    public let title: String
    public let detail: String
    public let field: String?
    public let permission: String?
    /// For 405: the methods the path does support (sent as `Allow`).
    public let allowedMethods: [String]
    /// For 429 and 503: seconds to wait (sent as `Retry-After`).
    public let retryAfter: Int?
    /// Sent with `Connection: close`, and the connection is closed after it (a caller that holds
    /// no permission at all keeps no connection open).
    public var closesConnection = false
    /// `urn:tokenvault:request:ID`, set by `document(requestID:)` for the one encoding.
    private var instance: String?

    /// The status always comes from the code (`VaultError.Code.httpStatus`, one exhaustive switch).
    public init(
        _ code: VaultError.Code, detail: String, field: String? = nil, permission: String? = nil,
        allowedMethods: [String] = [], retryAfter: Int? = nil
    ) {
        self.status = HTTPResponse.Status(code: code.httpStatus)
        self.code = code
        self.title = code.title
        self.detail = detail
        self.field = field
        self.permission = permission
        self.allowedMethods = allowedMethods
        self.retryAfter = retryAfter
    }

    /// A `VaultError` as the API answers it. A 500 never shows its message (it may name a file or
    /// a term); the caller sees a fixed text and the daemon logs the message.
    public init(_ error: VaultError) {
        let detail = error.code.isInternal ? "internal error (\(error.code)); see the daemon log" : error.detail
        self.init(error.code, detail: detail, field: error.field, retryAfter: error.retryAfter)
    }

    enum CodingKeys: String, CodingKey { case type, title, status, detail, code, field, permission, instance }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("https://tokenvault.dev/problems/\(code.rawValue)", forKey: .type)
        try container.encode(title, forKey: .title)
        try container.encode(Int(status.code), forKey: .status)
        try container.encode(detail, forKey: .detail)
        try container.encode(code.rawValue, forKey: .code)
        try container.encodeIfPresent(field, forKey: .field)
        try container.encodeIfPresent(permission, forKey: .permission)
        try container.encodeIfPresent(instance, forKey: .instance)
    }

    /// The document without `instance`, for answers written before any request was read.
    func compactJSON() -> String {
        (try? VaultAPI.jsonBody(self)).map { String(buffer: $0) } ?? "{}"
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let (headers, body) = try document(requestID: (context as? VaultRequestContext)?.requestID)
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The answer's headers and body, with `instance` and `X-Request-Id` when the request has an
    /// id: the one rendering (one JSON encoding), for the router and the fast paths alike.
    func document(requestID: String?) throws -> (HTTPFields, ByteBuffer) {
        var document = self
        var headers: HTTPFields = [.contentType: "application/problem+json"]
        if let requestID {
            document.instance = "urn:tokenvault:request:\(requestID)"
            headers[.requestID] = requestID
        }
        if !allowedMethods.isEmpty { headers[.allow] = allowedMethods.joined(separator: ", ") }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if closesConnection { headers[.connection] = "close" }
        return (headers, try VaultAPI.jsonBody(document))
    }
}
