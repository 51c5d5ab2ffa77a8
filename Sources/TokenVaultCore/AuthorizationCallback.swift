/// What an authorization server's redirect brought back (RFC 6749 section 4.1.2 and 4.1.2.1,
/// RFC 9207's `iss`), read from the whole callback URL or from its parts. A callback is refused
/// (`invalid_callback`) unless it carries exactly one `state` and either one `code` or one
/// `error`: a URL with two of them is a mix of two answers (or an attempt to make one). Pure.
public struct AuthorizationCallback: Sendable {
    public enum Outcome: Sendable {
        case code(SecretBytes)
        /// The server's `error`, and its `error_description` if any (for the caller; not kept).
        case error(String, description: String?)
    }

    public var state: SecretBytes
    public var issuer: String?
    public var outcome: Outcome

    public init(state: SecretBytes, issuer: String?, outcome: Outcome) {
        self.state = state
        self.issuer = issuer
        self.outcome = outcome
    }

    /// Reads the query of `url` (or its fragment, for a server that answers there).
    public static func parse(url: String) throws(VaultError) -> AuthorizationCallback {
        let afterQuery = url.split(separator: "?", maxSplits: 1).dropFirst().first
        let afterFragment = url.split(separator: "#", maxSplits: 1).dropFirst().first
        let query = afterQuery.map { $0.split(separator: "#", maxSplits: 1).first ?? "" } ?? afterFragment ?? ""
        guard let pairs = FormEncoding.decode(query) else {
            throw invalid("the callback URL's query does not decode")
        }
        return try parse(pairs)
    }

    /// Reads the parameters as they came, refusing any of ours given twice.
    public static func parse(_ pairs: [(name: String, value: String)]) throws(VaultError) -> AuthorizationCallback {
        var seen: [String: String] = [:]
        for (name, value) in pairs where watched.contains(name) {
            guard seen[name] == nil else { throw invalid("the callback carries \(name) more than once") }
            seen[name] = value
        }
        guard let state = seen["state"], !state.isEmpty else { throw invalid("the callback carries no state") }
        let outcome: Outcome
        switch (seen["code"], seen["error"]) {
        case (let code?, nil) where !code.isEmpty: outcome = .code(SecretBytes(utf8: code))
        case (nil, let error?) where !error.isEmpty:
            outcome = .error(
                printable(error, limit: 64), description: seen["error_description"].map { printable($0, limit: 200) })
        case (_?, _?): throw invalid("the callback carries both a code and an error")
        default: throw invalid("the callback carries neither a code nor an error")
        }
        return AuthorizationCallback(state: SecretBytes(utf8: state), issuer: seen["iss"], outcome: outcome)
    }

    /// RFC 6749's characters for `error` and `error_description` (printable ASCII but `"` and
    /// `\\`), anything else dropped, cut at `limit`: the text comes from a browser's address bar
    /// and goes into problem details and audit rows.
    static func printable(_ text: String, limit: Int) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.filter { (0x20...0x7E).contains($0.value) && $0 != "\"" && $0 != "\\" }.prefix(
                    limit)))
    }

    private static let watched: Set<String> = ["state", "code", "error", "error_description", "iss"]

    private static func invalid(_ message: String) -> VaultError {
        VaultError(code: .invalidCallback, message: message)
    }
}
