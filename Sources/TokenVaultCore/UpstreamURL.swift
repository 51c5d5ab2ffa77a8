/// An absolute URL a credential's access token may be sent to, read strictly: `scheme://host
/// [:port]/path[?query]`, no user info, no fragment, and no path that a server could read as
/// leaving the prefix it was checked against (`.` or `..` segments, an encoded `/`, `\` or `.`).
/// What `APIBase.contains` judges and the proxy sends: one reading of the URL for both.
public struct UpstreamURL: Sendable, Equatable, CustomStringConvertible {
    /// `https`, or `http` to a loopback host.
    public let scheme: String
    /// Lower-cased; an IPv6 address keeps its brackets.
    public let host: String
    /// The explicit port, or the scheme's default.
    public let port: Int
    /// Starts with `/`; as written (percent-encoding kept).
    public let path: String
    /// Without the `?`; nil when there is none.
    public let query: String?

    public var description: String { origin + path + (query.map { "?" + $0 } ?? "") }

    /// Scheme, host and port: what a connection is made to (and what the audit trail names).
    public var origin: String {
        let defaultPort = scheme == "https" ? 443 : 80
        return "\(scheme)://\(host)\(port == defaultPort ? "" : ":\(port)")"
    }

    public init(parsing text: String) throws(UpstreamURLProblem) {
        let shown = String(text.prefix(200))
        guard text.utf8.count <= 8192 else { throw UpstreamURLProblem("the URL is longer than 8192 bytes") }
        guard text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw UpstreamURLProblem("'\(shown)' has spaces, control or non-ASCII characters; percent-encode them")
        }
        guard let schemeEnd = text.range(of: "://") else {
            throw UpstreamURLProblem("'\(shown)' is not an absolute URL")
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        var rest = text[schemeEnd.upperBound...]
        guard !rest.contains("#") else { throw UpstreamURLProblem("'\(shown)' must not have a #fragment") }
        var query: String?
        if let mark = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: mark)...])
            rest = rest[..<mark]
        }
        let authorityEnd = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let path = authorityEnd == rest.endIndex ? "/" : String(rest[authorityEnd...])
        guard !authority.contains("@") else { throw UpstreamURLProblem("'\(shown)' must not carry user information") }
        var host = Substring(authority)
        var port: Int?
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            host = authority[..<colon]
            let digits = authority[authority.index(after: colon)...]
            guard let value = Int(digits), digits.allSatisfy(\.isNumber), (1...65_535).contains(value) else {
                throw UpstreamURLProblem("'\(shown)' has an invalid port")
            }
            port = value
        }
        guard !host.isEmpty, Self.isHostText(host) else { throw UpstreamURLProblem("'\(shown)' has an invalid host") }
        let lowered = host.lowercased()
        switch scheme {
        case "https": break
        case "http" where Self.isLoopback(lowered): break
        case "http":
            throw UpstreamURLProblem(
                "'\(shown)' uses plain http to \(lowered); https is required except for loopback "
                    + "(127.0.0.0/8, ::1, localhost)")
        default: throw UpstreamURLProblem("'\(shown)' has scheme '\(scheme)'; expected https")
        }
        try Self.checkPath(path, shown: shown)
        self.scheme = scheme
        self.host = lowered
        self.port = port ?? (scheme == "https" ? 443 : 80)
        self.path = path
        self.query = query
    }

    /// `localhost`, `127.0.0.0/8` and `::1`, written any way a URL may give them.
    public static func isLoopback(_ host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return false }
        let values = octets.compactMap { octet -> Int? in
            guard (1...3).contains(octet.count), octet.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
            return Int(octet).flatMap { $0 <= 255 ? $0 : nil }
        }
        return values.count == 4 && values[0] == 127
    }

    private static func isHostText(_ host: Substring) -> Bool {
        if host.hasPrefix("[") {
            return host.hasSuffix("]")
                && host.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        return host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
    }

    /// A path a server reads the same way this type does: no dot segments (also as `..;x`, which
    /// Java servers read as `..`), no encoded separator or dot (`%2f`, `%5c`, `%2e`), nothing a
    /// server might decode twice or the IIS way (`%25`, `%u`), no backslash.
    private static func checkPath(_ path: String, shown: String) throws(UpstreamURLProblem) {
        guard path.hasPrefix("/") else { throw UpstreamURLProblem("'\(shown)' has no path") }
        let lowered = path.lowercased()
        for encoded in ["%2f", "%5c", "%2e", "%00", "%25", "%u"] where lowered.contains(encoded) {
            throw UpstreamURLProblem("'\(shown)' has an encoded '/', '\\', '.', '%' or NUL in its path")
        }
        guard !path.contains("\\") else { throw UpstreamURLProblem("'\(shown)' has a backslash in its path") }
        for segment in path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        where [".", ".."].contains(segment.split(separator: ";", omittingEmptySubsequences: false)[0]) {
            throw UpstreamURLProblem("'\(shown)' has a '.' or '..' segment in its path")
        }
    }
}

/// Why a URL is not one a token may be sent to, as a sentence.
public struct UpstreamURLProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var problem: String
    public init(_ problem: String) { self.problem = problem }
    public var description: String { problem }
}
