import TokenVaultCore

/// Tests name provider codes as they appear on the wire (`"invalid_grant"`, `"http_503"`); the
/// product's modules use `ProviderFailure.Code`'s constants and have no such conversion.
extension ProviderFailure.Code: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}
