/// Whether a sign-in's `redirect_uri` is one the instance registered. Exact string comparison
/// (RFC 9700 section 4.1.3), except that a registered loopback URI (`http://127.0.0.1/…` or
/// `http://[::1]/…`) admits any port, since a native app's listener takes whatever port is free
/// (RFC 8252 section 7.3). `localhost` is not loopback here (RFC 8252 section 8.3). Pure.
public enum RedirectURIRule {
    public static func admits(_ candidate: String, registered: [String]) -> Bool {
        registered.contains { $0 == candidate || loopbackMatch(candidate, $0) }
    }

    private static func loopbackMatch(_ candidate: String, _ registered: String) -> Bool {
        guard let pattern = loopback(registered), let actual = loopback(candidate) else {
            return false
        }
        return actual.host == pattern.host && actual.rest == pattern.rest
    }

    /// An `http` URI on a loopback address, split around its port.
    private static func loopback(_ uri: String) -> (host: Substring, port: Substring?, rest: Substring)? {
        for host in ["127.0.0.1", "[::1]"] {
            let prefix = "http://" + host
            guard uri.hasPrefix(prefix) else { continue }
            var rest = uri.dropFirst(prefix.count)
            var port: Substring?
            if rest.first == ":" {
                let digits = rest.dropFirst().prefix(while: \.isASCIIDigit)
                guard !digits.isEmpty, digits.count <= 5, let value = Int(digits), (1...65535).contains(value) else {
                    return nil
                }
                port = digits
                rest = rest.dropFirst(1 + digits.count)
            }
            guard rest.isEmpty || rest.first == "/" || rest.first == "?" else { return nil }
            return (Substring(host), port, rest)
        }
        return nil
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
