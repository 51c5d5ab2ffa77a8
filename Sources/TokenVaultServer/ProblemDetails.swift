import Foundation
import Hummingbird
import TokenVaultCore

/// An RFC 9457 `application/problem+json` error with a stable `code`. The `detail` comes from
/// a `VaultError` message or a fixed text: never a token, never a statement argument.
public struct ProblemDetails: HTTPResponseError, Encodable, Sendable {
    public let status: HTTPResponse.Status
    public let code: String
    public let title: String
    public let detail: String
    public let field: String?
    public let permission: String?
    /// For 405: the methods the path does support (sent as `Allow`).
    public let allowedMethods: [String]
    /// For 429 and 503: seconds to wait (sent as `Retry-After`).
    public let retryAfter: Int?

    public init(
        _ status: HTTPResponse.Status, code: String, detail: String, field: String? = nil, permission: String? = nil,
        allowedMethods: [String] = [], retryAfter: Int? = nil
    ) {
        self.retryAfter = retryAfter
        self.status = status
        self.code = code
        self.title = status.reasonPhrase
        self.detail = detail
        self.field = field
        self.permission = permission
        self.allowedMethods = allowedMethods
    }

    /// The HTTP status a `VaultError` code maps to.
    public init(_ error: VaultError) {
        let status: HTTPResponse.Status =
            switch error.code {
            case "invalid_field", "invalid_payload", "invalid_credential_id", "invalid_request": .badRequest
            case "credential_not_found": .notFound
            case "unknown_provider", "nonce_mismatch", "audience_mismatch", "id_token_expired", "id_token_invalid":
                .unprocessableContent
            case "token_expired", "conflict": .conflict
            case "forbidden": .forbidden
            case "payload_too_large": .contentTooLarge
            default: .internalServerError
            }
        let field = error.message.firstMatch(of: /^field '([^']+)'/).map { String($0.output.1) }
        let detail =
            status == .internalServerError ? "internal error (\(error.code)); see the daemon log" : error.message
        self.init(status, code: error.code, detail: detail, field: field)
    }

    enum CodingKeys: String, CodingKey { case type, title, status, detail, code, field, permission, instance }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode("https://tokenvault.dev/problems/\(code)", forKey: .type)
        try container.encode(title, forKey: .title)
        try container.encode(Int(status.code), forKey: .status)
        try container.encode(detail, forKey: .detail)
        try container.encode(code, forKey: .code)
        try container.encodeIfPresent(field, forKey: .field)
        try container.encodeIfPresent(permission, forKey: .permission)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var document = try JSONSerialization.jsonObject(with: encoder.encode(self)) as? [String: Any] ?? [:]
        var headers: HTTPFields = [.contentType: "application/problem+json"]
        if let requestID = (context as? VaultRequestContext)?.requestID {
            document["instance"] = "urn:tokenvault:request:\(requestID)"
            headers[.requestID] = requestID
        }
        if !allowedMethods.isEmpty { headers[.allow] = allowedMethods.joined(separator: ", ") }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        let body = try JSONSerialization.data(
            withJSONObject: document, options: [.sortedKeys, .withoutEscapingSlashes])
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
