import Foundation

/// The checks both endpoints make before looking at what is asked: method, required headers,
/// form encoding, repeated fields (RFC 6749 3.2) and client authentication (RFC 6749 2.3.1).
extension ProviderState {
    /// An error answer, or nil when the request may go on.
    func precheck(_ request: RecordedRequest) -> HTTPReply? {
        guard request.method == "POST" else {
            return error(405, "invalid_request", "use POST", headers: [("Allow", "POST")])
        }
        for (name, value) in options.requiredHeaders.sorted(by: { $0.key < $1.key })
        where request.headers[name.lowercased()] != value {
            return error(400, "invalid_request", "header \(name) is missing or wrong")
        }
        guard request.headers["content-type"]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true
        else {
            return error(400, "invalid_request", "the body must be application/x-www-form-urlencoded")
        }
        let names = request.formFields.map(\.name)
        if let repeated = names.first(where: { name in names.filter { $0 == name }.count > 1 }) {
            return error(400, "invalid_request", "parameter \(repeated) is repeated")
        }
        if let failure = clientAuthenticationFailure(request) {
            let challenge: [(String, String)] =
                options.clientAuthentication == .basic
                ? [("WWW-Authenticate", #"Basic realm="test-oauth-server""#)] : []
            return error(401, "invalid_client", failure, headers: challenge)
        }
        return nil
    }

    /// Why client authentication failed, or nil when it passed.
    func clientAuthenticationFailure(_ request: RecordedRequest) -> String? {
        let form = request.form
        if let id = form["client_id"], id != options.clientID { return "unknown client_id" }
        let secret = options.clientSecret ?? ""
        switch options.clientAuthentication {
        case .basic:
            guard let header = request.headers["authorization"], let (user, password) = Self.basicCredentials(header)
            else { return "HTTP Basic client authentication is required" }
            guard user == options.clientID, password == secret else { return "client authentication failed" }
        case .post:
            guard form["client_id"] == options.clientID else { return "client_id is required" }
            guard (form["client_secret"] ?? "") == secret else { return "client authentication failed" }
        case .none:
            guard form["client_id"] == options.clientID else { return "client_id is required" }
        }
        return nil
    }

    /// `Basic base64(form-encoded id ":" form-encoded secret)`, decoded; nil if malformed.
    static func basicCredentials(_ header: String) -> (String, String)? {
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
            let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return nil }
        return (
            FormURLEncoding.decodeComponent(text[..<colon]),
            FormURLEncoding.decodeComponent(text[text.index(after: colon)...])
        )
    }
}
