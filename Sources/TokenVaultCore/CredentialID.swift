/// A credential's address: `namespace/name`.
///
/// Both parts are 1-64 (namespace) or 1-128 (name) characters of `A-Z a-z 0-9 . _ -`, not
/// starting with `.` or `-`, so an id is safe in a URL path, a log line and a file name.
public struct CredentialID: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let namespace: String
    public let name: String

    public static let maximumNamespaceLength = 64
    public static let maximumNameLength = 128

    public init(namespace: String, name: String) throws(VaultError) {
        try Self.validate(namespace, part: "namespace", maximumLength: Self.maximumNamespaceLength)
        try Self.validate(name, part: "name", maximumLength: Self.maximumNameLength)
        self.namespace = namespace
        self.name = name
    }

    /// Parses `namespace/name` (at the first `/`; a name with another fails validation). Every
    /// row of a listing is parsed, so the text is cut at the slash, not split into an array.
    public init(_ text: String) throws(VaultError) {
        guard let slash = text.utf8.firstIndex(of: UInt8(ascii: "/")) else {
            throw .invalidCredentialID("'\(Self.printable(text))' is not of the form namespace/name")
        }
        try self.init(namespace: String(text[..<slash]), name: String(text[text.utf8.index(after: slash)...]))
    }

    public var description: String { "\(namespace)/\(name)" }

    public static func < (lhs: CredentialID, rhs: CredentialID) -> Bool { lhs.description < rhs.description }

    /// Validates a namespace on its own (list filters, authorisation rules).
    public static func validateNamespace(_ namespace: String) throws(VaultError) {
        try validate(namespace, part: "namespace", maximumLength: maximumNamespaceLength)
    }

    /// Walks the UTF-8 view in place: every token read validates an id, so no copy is made.
    private static func validate(_ part: String, part label: String, maximumLength: Int) throws(VaultError) {
        let bytes = part.utf8
        guard let first = bytes.first else { throw .invalidCredentialID("the \(label) is empty") }
        guard bytes.count <= maximumLength else {
            throw .invalidCredentialID(
                "the \(label) is \(bytes.count) characters long; at most \(maximumLength) allowed")
        }
        guard bytes.allSatisfy(isAllowed) else {
            throw .invalidCredentialID(
                "the \(label) '\(printable(part))' may contain only letters, digits, '.', '_' and '-'")
        }
        guard first != UInt8(ascii: "."), first != UInt8(ascii: "-") else {
            throw .invalidCredentialID("the \(label) '\(printable(part))' must not start with '.' or '-'")
        }
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// Echoes user input in an error without control characters and without unbounded length.
    static func printable(_ text: String) -> String {
        let cleaned = String(
            text.unicodeScalars.map { $0.properties.isWhitespace || $0.value < 0x20 ? "?" : Character($0) })
        return cleaned.count > 80 ? String(cleaned.prefix(80)) + "…" : cleaned
    }
}

/// As JSON, the id's text (`namespace/name`), checked when read.
extension CredentialID: Codable {
    public init(from decoder: any Decoder) throws {
        try self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
