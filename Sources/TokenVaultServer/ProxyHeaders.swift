import HTTPTypes
import TokenVaultCore

/// Which headers pass the proxy, each way. Pure.
///
/// Upstream: everything the caller sent except its own credentials (`Authorization`, `Cookie`,
/// `DPoP`, `Proxy-*`), the hop-by-hop headers (RFC 9110 §7.6.1, and any the `Connection` header
/// names), the ones the HTTP client sets itself (`Host`, `Content-Length`, `Expect`), the ones
/// some servers let rewrite the path or method behind the base's prefix (`X-Original-URL`,
/// `X-Rewrite-URL`, `Forwarded`, `X-Forwarded-*`, `X-HTTP-Method-Override` and kin) and the
/// vault's own `TokenVault-*`. Back: everything the upstream sent except hop-by-hop headers,
/// `Set-Cookie` (a session cookie is a credential the caller is not meant to hold) and any header
/// whose value contains the access token.
enum ProxyHeaders {
    /// Lower-cased names never forwarded upstream.
    static let notForwarded: Set<String> = [
        "authorization", "cookie", "dpop", "host", "content-length", "expect", "connection", "keep-alive", "te",
        "trailer", "trailers", "transfer-encoding", "upgrade", "x-original-url", "x-rewrite-url", "forwarded",
        "x-http-method-override", "x-http-method", "x-method-override",
    ]
    /// Lower-cased names never returned to the caller.
    static let notReturned: Set<String> = [
        "connection", "keep-alive", "proxy-authenticate", "proxy-connection", "te", "trailer", "trailers",
        "transfer-encoding", "upgrade", "set-cookie", "set-cookie2",
    ]

    /// The caller's headers that go upstream, in order.
    static func forward(_ fields: HTTPFields) -> [(name: String, value: String)] {
        let named = connectionNames(fields.filter { $0.name == .connection }.map(\.value))
        return fields.compactMap { field in
            let name = field.name.canonicalName
            guard !notForwarded.contains(name), !named.contains(name), !name.hasPrefix("proxy-"),
                !name.hasPrefix("tokenvault-"), !name.hasPrefix("x-forwarded-")
            else { return nil }
            return (field.name.rawName, field.value)
        }
    }

    /// The upstream's headers that go back to the caller.
    static func returned(_ headers: [(name: String, value: String)], token: SecretBytes) -> HTTPFields {
        let named = connectionNames(headers.filter { $0.name.lowercased() == "connection" }.map(\.value))
        var fields = HTTPFields()
        for (name, value) in headers {
            let lowered = name.lowercased()
            guard !notReturned.contains(lowered), !named.contains(lowered), !lowered.hasPrefix("tokenvault-"),
                !contains(value, token), let fieldName = HTTPField.Name(name)
            else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        return fields
    }

    /// The header names a `Connection` header lists (hop-by-hop for this connection only).
    private static func connectionNames(_ values: [String]) -> Set<String> {
        Set(values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
    }

    private static func contains(_ value: String, _ token: SecretBytes) -> Bool {
        guard token.count > 0, value.utf8.count >= token.count else { return false }
        return token.withUnsafeBytes { secret in Array(value.utf8).firstRange(of: secret) != nil }
    }
}
