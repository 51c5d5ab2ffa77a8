import TokenVaultCore

/// A request target the fast path recognises: `/v1/credentials/{ns}/{name}/token`, optionally
/// with `?min_ttl=S` and nothing else. Anything unusual (another parameter, percent-encoding,
/// an invalid id or `min_ttl`) is not recognised, and the router answers it with its own
/// precise error.
struct TokenReadTarget: Equatable {
    let id: CredentialID
    let minimumTTL: Double

    private static let prefix = Array((Route.list.template + "/").utf8)
    private static let suffix = Array("/token".utf8)
    private static let query = Array("min_ttl=".utf8)

    init?(_ target: String) {
        var target = target
        guard let parsed = target.withUTF8({ Self(bytes: UnsafeRawBufferPointer($0)) }) else { return nil }
        self = parsed
    }

    /// Parses the target's bytes as received: only the namespace and name become strings.
    init?(bytes target: UnsafeRawBufferPointer) {
        guard target.starts(with: Self.prefix) else { return nil }
        var pathEnd = target.count
        var minimumTTL = 0.0
        if let question = target.firstIndex(of: UInt8(ascii: "?")) {
            pathEnd = question
            let query = target[(question + 1)...]
            // Anything but a valid `min_ttl` goes to the router, which answers it with its 400.
            guard query.starts(with: Self.query), let seconds = MinimumTTL.parse(query.dropFirst(Self.query.count))
            else { return nil }
            minimumTTL = seconds
        }
        let path = target[Self.prefix.count..<pathEnd]
        guard path.count > Self.suffix.count, path.suffix(Self.suffix.count).elementsEqual(Self.suffix) else {
            return nil
        }
        let id = path.dropLast(Self.suffix.count)
        guard let slash = id.firstIndex(of: UInt8(ascii: "/")),
            !id[(slash + 1)...].contains(UInt8(ascii: "/")),
            let credential = try? CredentialID(
                namespace: String(decoding: id[..<slash], as: UTF8.self),
                name: String(decoding: id[(slash + 1)...], as: UTF8.self))
        else { return nil }
        self.id = credential
        self.minimumTTL = minimumTTL
    }
}
