/// An RFC 9457 problem document as the daemon sends it (`application/problem+json`).
/// `code` is the stable, machine-readable part; `detail` is for people and never holds a secret.
public struct Problem: Codable, Sendable, Equatable, CustomStringConvertible {
    /// `https://tokenvault.dev/problems/<code>`.
    public var type: String?
    public var title: String?
    /// The HTTP status.
    public var status: Int
    /// For example `credential_not_found`, `token_expired`, `forbidden`.
    public var code: String
    public var detail: String?
    /// `urn:tokenvault:request:<X-Request-Id>`, matching the daemon's log lines.
    public var instance: String?
    /// For `400`: the offending body path (`token.expires_in`) or query parameter (`limit`).
    public var field: String?
    /// For `403`: the permission the caller lacks.
    public var permission: String?

    public init(
        status: Int, code: String, title: String? = nil, detail: String? = nil, field: String? = nil,
        permission: String? = nil, type: String? = nil, instance: String? = nil
    ) {
        self.type = type
        self.title = title
        self.status = status
        self.code = code
        self.detail = detail
        self.instance = instance
        self.field = field
        self.permission = permission
    }

    public var description: String {
        var text = "\(detail ?? title ?? code) (\(status) \(code)"
        if let field { text += ", field \(field)" }
        if let permission { text += ", needs \(permission)" }
        if let instance { text += ", \(instance)" }
        return text + ")"
    }
}
