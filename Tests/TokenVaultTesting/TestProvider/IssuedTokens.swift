import Foundation

/// A token family as a sign-in creates it (`TestOAuthServer.issue`), for tests to put in the vault.
public struct IssuedTokens: Sendable {
    public var accessToken: String
    public var refreshToken: String
    /// The access token's lifetime in seconds.
    public var expiresIn: Double
    /// Groups every token minted from this sign-in; reuse detection revokes the whole family.
    public var familyID: String
    public var scopes: [String]
    /// The `sub` of the family's id_tokens.
    public var subject: String

    /// An RFC 6749 JSON token response with these tokens (expires_in as a number), e.g. to PUT into the vault.
    public var responseJSON: String {
        var fields: [(String, JSONText)] = [
            ("access_token", .string(accessToken)), ("token_type", .string("Bearer")),
            ("expires_in", expiresIn == expiresIn.rounded() ? .integer(Int(expiresIn)) : .float(expiresIn)),
            ("refresh_token", .string(refreshToken)),
        ]
        if !scopes.isEmpty { fields.append(("scope", .string(scopes.joined(separator: " ")))) }
        return JSONText.object(fields).rendered
    }
}
