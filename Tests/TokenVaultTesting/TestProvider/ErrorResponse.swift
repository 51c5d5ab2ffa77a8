import NIOHTTP1

/// Error answers in each provider's shape, so client tests see what the real provider sends:
/// a client that only reads `error_description` must notice T-ID's `error_message`, and one that
/// only reads `error` must still classify Sber's gateway answers by status.
enum ErrorResponse {
    static func make(
        _ shape: ErrorShape, status: Int, code: String, description: String, retryAfter: String? = nil,
        extraHeaders: [(String, String)] = []
    ) -> HTTPReply {
        let body: JSONText
        switch shape {
        case .rfc6749:
            body = .object([("error", .string(code)), ("error_description", .string(description))])
        case .tinkoff:
            body = .object([("error", .string(code)), ("error_message", .string(description))])
        case .sberGateway:
            body = .object([
                ("httpCode", .string(String(status))), ("httpMessage", .string(reasonPhrase(status))),
                ("moreInformation", .string("\(code): \(description)")),
            ])
        case .esia:
            let text = description.hasPrefix("ESIA-") ? description : "ESIA-\(esiaNumber(code)): \(description)"
            body = .object([("error", .string(code)), ("error_description", .string(text))])
        }
        var headers = extraHeaders
        if let retryAfter { headers.append(("Retry-After", retryAfter)) }
        return .json(status, body, headers: headers)
    }

    static func reasonPhrase(_ status: Int) -> String { HTTPResponseStatus(statusCode: status).reasonPhrase }

    /// ESIA's numbers for the RFC 6749 codes; 007011, 007007, 007008 and 007053 are documented
    /// (docs/providers/esia.md), the rest are plausible guesses.
    static func esiaNumber(_ code: String) -> String {
        switch code {
        case "invalid_grant": return "007011"
        case "server_error": return "007007"
        case "temporarily_unavailable": return "007008"
        case "invalid_client": return "007053"
        case "unsupported_grant_type": return "007012"
        case "invalid_request": return "007014"
        default: return "007002"
        }
    }

    /// The page a proxy answers with when the service behind it fails.
    static func html(status: Int) -> HTTPReply {
        let title = "\(status) \(reasonPhrase(status))"
        return .text(
            status, contentType: "text/html; charset=utf-8",
            "<html>\r\n<head><title>\(title)</title></head>\r\n<body>\r\n<center><h1>\(title)</h1></center>\r\n"
                + "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
    }
}
