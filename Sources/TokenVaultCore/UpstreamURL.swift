/// An absolute URL a credential's access token may be sent to, read strictly: `scheme://host
/// [:port]/path[?query]`, no user info, no fragment, and no path that a server could read as
/// leaving the prefix it was checked against (`checkPath`: dot or empty segments, an encoded
/// separator or delimiter, overlong UTF-8).
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
    public let origin: String
    /// Host, and the port unless it is the scheme's default: the `Host` header's value.
    public let authority: String

    /// Reads the URL's bytes (ASCII only, checked first), so a proxied call pays no Unicode or
    /// Foundation string search for it.
    public init(parsing text: String) throws(UpstreamURLProblem) {
        func shown() -> String { String(text.prefix(200)) }
        guard text.utf8.count <= 8192 else { throw UpstreamURLProblem("the URL is longer than 8192 bytes") }
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw UpstreamURLProblem("'\(shown())' has spaces, control or non-ASCII characters; percent-encode them")
        }
        // Characters RFC 3986 does not allow in a URL: the HTTP client's URL parser would
        // percent-encode (or refuse) them, so the upstream would get another URL than the one
        // checked.
        guard !text.utf8.contains(where: Self.mustBeEncoded) else {
            throw Self.unencoded(shown())
        }
        let bytes = Array(text.utf8)
        func string(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        guard let schemeEnd = Self.schemeSeparator(in: bytes) else {
            throw UpstreamURLProblem("'\(shown())' is not an absolute URL")
        }
        let scheme = string(0..<schemeEnd.lowerBound).lowercased()
        var rest = schemeEnd.upperBound..<bytes.count
        guard !bytes[rest].contains(UInt8(ascii: "#")) else {
            throw UpstreamURLProblem("'\(shown())' must not have a #fragment")
        }
        var query: String?
        if let mark = bytes[rest].firstIndex(of: UInt8(ascii: "?")) {
            let range = (mark + 1)..<rest.upperBound
            guard !bytes[range].contains(UInt8(ascii: "\\")) else {
                throw Self.unencoded(shown())
            }
            try Self.checkEscapes(bytes[range], shown: shown)
            query = string(range)
            rest = rest.lowerBound..<mark
        }
        let authorityEnd = bytes[rest].firstIndex(of: UInt8(ascii: "/")) ?? rest.upperBound
        let authority = rest.lowerBound..<authorityEnd
        let path = authorityEnd == rest.upperBound ? "/" : string(authorityEnd..<rest.upperBound)
        guard !bytes[authority].contains(UInt8(ascii: "@")) else {
            throw UpstreamURLProblem("'\(shown())' must not carry user information")
        }
        var host = authority
        var port: Int?
        if let colon = bytes[authority].lastIndex(of: UInt8(ascii: ":")),
            !bytes[colon..<authority.upperBound].contains(UInt8(ascii: "]"))
        {
            host = authority.lowerBound..<colon
            let digits = bytes[(colon + 1)..<authority.upperBound]
            guard (1...5).contains(digits.count), digits.allSatisfy({ (0x30...0x39).contains($0) }),
                case let value = digits.reduce(0, { $0 * 10 + Int($1 - 0x30) }), (1...65_535).contains(value)
            else {
                throw UpstreamURLProblem("'\(shown())' has an invalid port")
            }
            port = value
        }
        guard !host.isEmpty, Self.isHostText(bytes[host]) else {
            throw UpstreamURLProblem("'\(shown())' has an invalid host")
        }
        let lowered = string(host).lowercased()
        switch scheme {
        case "https": break
        case "http" where Self.isLoopback(lowered): break
        case "http":
            throw UpstreamURLProblem("'\(shown())' uses plain http to \(lowered); \(Self.plainHTTPRule)")
        default: throw UpstreamURLProblem("'\(shown())' has scheme '\(scheme)'; expected https")
        }
        try Self.checkPath(
            authorityEnd == rest.upperBound ? [UInt8(ascii: "/")][...] : bytes[authorityEnd..<rest.upperBound],
            shown: shown)
        self.scheme = scheme
        self.host = lowered
        self.port = port ?? (scheme == "https" ? 443 : 80)
        self.path = path
        self.query = query
        let defaultPort = scheme == "https" ? 443 : 80
        self.authority = self.port == defaultPort ? lowered : "\(lowered):\(self.port)"
        self.origin = "\(scheme)://\(self.authority)"
    }

    /// Why plain http is refused, said the same way for every URL that carries a token.
    public static let plainHTTPRule =
        "https is required except to a loopback address written as one (127.0.0.0/8 or [::1]; not "
        + "'localhost', which may resolve to ::1 first, where any local user can listen on a port "
        + "the service holds on 127.0.0.1 only)"

    /// `127.0.0.0/8` and `::1`, written any way a URL may give them: where plain http may carry a
    /// token. Not a name such as `localhost`: resolved, it may give `::1` before `127.0.0.1`, and
    /// any local user may listen on `[::1]:port` while the service listens on `127.0.0.1` only;
    /// the token would go to them.
    public static func isLoopback(_ host: String) -> Bool {
        var host = Substring(host)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        // Four decimal octets of one to three digits, each at most 255, the first 127; read as
        // bytes (a proxied call checks its target's host every time).
        var (octets, digits, value, first) = (0, 0, 0, 0)
        for byte in host.utf8 {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, value <= 255 else { return false }
                if octets == 0 { first = value }
                (octets, digits, value) = (octets + 1, 0, 0)
            } else {
                guard (0x30...0x39).contains(byte), digits < 3 else { return false }
                (digits, value) = (digits + 1, value * 10 + Int(byte - 0x30))
            }
        }
        return octets == 3 && digits > 0 && value <= 255 && first == 127
    }

    private static func isHostText(_ host: ArraySlice<UInt8>) -> Bool {
        func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }
        func isLetter(_ byte: UInt8) -> Bool { (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) }
        if host.first == UInt8(ascii: "[") {
            return host.count >= 2 && host.last == UInt8(ascii: "]")
                && host.dropFirst().dropLast().allSatisfy {
                    HexDigit.value($0) != nil || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".")
                }
        }
        return host.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    /// The first `://`.
    private static func schemeSeparator(in bytes: [UInt8]) -> Range<Int>? {
        guard bytes.count >= 3 else { return nil }
        for index in 0..<(bytes.count - 2)
        where bytes[index] == UInt8(ascii: ":") && bytes[index + 1] == UInt8(ascii: "/")
            && bytes[index + 2] == UInt8(ascii: "/")
        {
            return index..<(index + 3)
        }
        return nil
    }

    /// A path a server reads the same way this type does: no segment of dots alone (also as
    /// `..;x`, which Java servers read as `..`, and `...`, which some read as `..` once trimmed),
    /// no empty segment but a trailing one (`//evil.example/x` reads as a host to a framework
    /// that resolves it against a base), no encoded separator, dot or delimiter (`%2f`, `%5c`,
    /// `%2e`, `%3b`, `%3f`, `%23`: decoded by one server and not by another, they move the path's
    /// end), nothing a server might decode twice or the IIS way (`%25`, `%u`), no backslash, and
    /// escapes that decode to UTF-8 as RFC 3629 writes it (an overlong `%c0%ae` is a `.` to a
    /// lenient decoder).
    private static func checkPath(_ path: ArraySlice<UInt8>, shown: () -> String) throws(UpstreamURLProblem) {
        guard path.first == UInt8(ascii: "/") else { throw UpstreamURLProblem("'\(shown())' has no path") }
        // One pass over the bytes (every proxied call's target is read here).
        var segmentStart = path.startIndex + 1
        var index = path.startIndex
        var escapesBeyondASCII = false
        while index <= path.endIndex {
            let byte = index < path.endIndex ? path[index] : UInt8(ascii: "/")
            switch byte {
            case UInt8(ascii: "%"):
                if Self.isRefusedEscape(path[(index + 1)...]) {
                    throw UpstreamURLProblem(
                        "'\(shown())' has an encoded '/', '\\', '.', ';', '?', '#', '%' or NUL in its path")
                }
                try Self.checkEscape(path[(index + 1)...], shown: shown)
                escapesBeyondASCII = escapesBeyondASCII || HexDigit.value(path[index + 1])! >= 8
            case UInt8(ascii: "\\"):
                throw UpstreamURLProblem("'\(shown())' has a backslash in its path")
            case UInt8(ascii: "/") where index > path.startIndex:
                // A segment's name is what precedes its `;` parameters: `/;/host` reads as `//host`
                // to a server that drops parameters, so an empty name is an empty segment.
                let name = path[segmentStart..<index].prefix { $0 != UInt8(ascii: ";") }
                if name.isEmpty, index < path.endIndex {
                    throw UpstreamURLProblem("'\(shown())' has an empty segment ('//' or '/;') in its path")
                }
                if !name.isEmpty, name.allSatisfy({ $0 == UInt8(ascii: ".") }) {
                    throw UpstreamURLProblem("'\(shown())' has a segment of dots ('.', '..') in its path")
                }
                segmentStart = index + 1
            default:
                break
            }
            index += 1
        }
        if escapesBeyondASCII, String(validating: Self.decoded(path), as: UTF8.self) == nil {
            throw UpstreamURLProblem(
                "'\(shown())' has escapes in its path that are not UTF-8 as RFC 3629 writes it (overlong or invalid)")
        }
    }

    /// `path` with its escapes decoded (each known to be `%` and two hex digits).
    private static func decoded(_ path: ArraySlice<UInt8>) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(path.count)
        var index = path.startIndex
        while index < path.endIndex {
            if path[index] == UInt8(ascii: "%") {
                bytes.append(HexDigit.value(path[index + 1])! << 4 | HexDigit.value(path[index + 2])!)
                index += 3
            } else {
                bytes.append(path[index])
                index += 1
            }
        }
        return bytes
    }

    private static func unencoded(_ shown: String) -> UpstreamURLProblem {
        UpstreamURLProblem(
            "'\(shown)' has a character a URL must percent-encode (\" < > ^ ` { | }, or \\ in its query)")
    }

    /// `"`, `<`, `>`, `^`, `` ` ``, `{`, `|` and `}`.
    private static func mustBeEncoded(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "^"), UInt8(ascii: "`"),
            UInt8(ascii: "{"), UInt8(ascii: "|"), UInt8(ascii: "}"):
            true
        default: false
        }
    }

    /// Every `%` in `bytes` begins an escape (`checkEscape`).
    private static func checkEscapes(_ bytes: ArraySlice<UInt8>, shown: () -> String) throws(UpstreamURLProblem) {
        var index = bytes.startIndex
        while let percent = bytes[index...].firstIndex(of: UInt8(ascii: "%")) {
            try checkEscape(bytes[(percent + 1)...], shown: shown)
            index = percent + 1
        }
    }

    /// The bytes after a `%` begin with two hex digits (RFC 3986 `pct-encoded`).
    private static func checkEscape(_ next: ArraySlice<UInt8>, shown: () -> String) throws(UpstreamURLProblem) {
        guard next.count >= 2, HexDigit.value(next[next.startIndex]) != nil,
            HexDigit.value(next[next.startIndex + 1]) != nil
        else {
            throw UpstreamURLProblem("'\(shown())' has a '%' that two hex digits do not follow; write '%25' for '%'")
        }
    }

    /// The bytes after a `%` begin `2f`, `5c`, `2e`, `3b`, `3f`, `23`, `00`, `25` or `u`, in any case.
    private static func isRefusedEscape(_ next: ArraySlice<UInt8>) -> Bool {
        guard let first = next.first.map({ $0 | 0x20 }) else { return false }
        if first == UInt8(ascii: "u") { return true }
        guard next.count >= 2 else { return false }
        let second = next[next.startIndex + 1] | 0x20
        switch (first, second) {
        case (UInt8(ascii: "2"), UInt8(ascii: "f")), (UInt8(ascii: "5"), UInt8(ascii: "c")),
            (UInt8(ascii: "2"), UInt8(ascii: "e")), (UInt8(ascii: "3"), UInt8(ascii: "b")),
            (UInt8(ascii: "3"), UInt8(ascii: "f")), (UInt8(ascii: "2"), UInt8(ascii: "3")),
            (UInt8(ascii: "0"), UInt8(ascii: "0")), (UInt8(ascii: "2"), UInt8(ascii: "5")):
            return true
        default:
            return false
        }
    }
}

/// Why a URL is not one a token may be sent to, as a sentence.
public struct UpstreamURLProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var problem: String
    public init(_ problem: String) { self.problem = problem }
    public var description: String { problem }
}
