import TokenVaultCore

/// A request target the fast path recognises: `/v1/credentials/{ns}/{name}/token`, optionally
/// with `?min_ttl=S` and nothing else. Anything unusual (another parameter, percent-encoding,
/// an invalid id or `min_ttl`) is not recognised, and the router answers it with its own
/// precise error.
struct TokenReadTarget: Equatable {
    let id: CredentialID
    let minimumTTL: Double

    private static let prefix = "/v1/credentials/"
    private static let suffix = "/token"

    init?(_ target: String) {
        guard target.hasPrefix(Self.prefix) else { return nil }
        let path: Substring
        var minimumTTL = 0.0
        if let question = target.firstIndex(of: "?") {
            path = target[..<question]
            let query = target[target.index(after: question)...]
            let value = query.dropFirst("min_ttl=".count)
            // Plain decimals only: `+`, exponents and hex floats are left to the router's parser.
            guard query.hasPrefix("min_ttl="), value.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                let seconds = Double(value), seconds <= 86_400
            else { return nil }
            minimumTTL = seconds
        } else {
            path = target[...]
        }
        guard path.hasSuffix(Self.suffix) else { return nil }
        let parts = path.dropFirst(Self.prefix.count).dropLast(Self.suffix.count).split(
            separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let id = try? CredentialID(namespace: String(parts[0]), name: String(parts[1])) else {
            return nil
        }
        self.id = id
        self.minimumTTL = minimumTTL
    }
}
