/// How many items a page of any listing holds (the credentials, the proxy's, the audit trail):
/// the `limit` query parameter, 1 to 500, and 100 without it (also the default of a
/// `CredentialQuery` and of the CLI's listings).
public enum PageSize {
    public static let standard = 100
    public static let allowed = 1...500

    public static func parse(_ text: String?) throws -> Int {
        guard let text else { return standard }
        guard let value = Int(text), allowed.contains(value) else {
            throw VaultError.invalidField("limit", "must be an integer \(allowed.lowerBound)-\(allowed.upperBound)")
        }
        return value
    }
}
