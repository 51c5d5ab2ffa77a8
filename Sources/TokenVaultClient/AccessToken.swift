import Foundation

/// An access token for immediate use (the API's `TokenResponse`). There is no refresh token:
/// it never leaves the daemon.
///
/// `description`, `debugDescription` and mirrors (`dump`, test failure output) redact both
/// token values, so logging an `AccessToken` by accident leaks nothing.
public struct AccessToken: Codable, Sendable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable
{
    /// The access token (for a `verify_token` credential, the verify token).
    public var accessToken: String
    /// `Bearer` when the provider gave none.
    public var tokenType: String
    /// RFC 3339; nil when the expiry is unknown.
    public var expiresAt: String?
    /// The OIDC id token, when the credential has one.
    public var idToken: String?
    /// A derived token's `issued_token_type` (`exchangeToken`); nil for the credential's own.
    public var issuedTokenType: String?
    /// A derived token's scopes (`exchangeToken`); nil for the credential's own.
    public var scopes: [String]?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", tokenType = "token_type", expiresAt = "expires_at", idToken = "id_token"
        case issuedTokenType = "issued_token_type", scopes
    }

    public init(accessToken: String, tokenType: String, expiresAt: String? = nil, idToken: String? = nil) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresAt = expiresAt
        self.idToken = idToken
    }

    /// `expiresAt` parsed; nil when unknown.
    public var expiresAtDate: Date? { expiresAt.flatMap(RFC3339.date) }

    /// The value for an HTTP `Authorization` header: `<token_type> <access_token>`.
    public var authorizationHeaderValue: String { "\(tokenType) \(accessToken)" }

    public var description: String {
        "AccessToken(access_token: <redacted>, token_type: \(tokenType), expires_at: \(expiresAt ?? "unknown"), "
            + "id_token: \(idToken == nil ? "none" : "<redacted>"))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accessToken": "<redacted>", "tokenType": tokenType, "expiresAt": expiresAt ?? "unknown",
                "idToken": idToken == nil ? "none" : "<redacted>",
            ],
            displayStyle: .struct)
    }
}
