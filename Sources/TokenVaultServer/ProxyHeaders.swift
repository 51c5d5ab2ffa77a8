import Foundation
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
    /// Whether the upstream connection ends with this call: a body on a method that defines none
    /// (GET, DELETE). An upstream that ignores such a body would read it as the next request on
    /// the connection, and kept connections are shared by every caller of the instance: one
    /// caller's smuggled request would answer another's call, sent with its token. Such a call
    /// goes with `Connection: close` and its connection is not kept.
    static func endsConnection(method: HTTPRequest.Method, hasBody: Bool) -> Bool {
        hasBody && ![.post, .put, .patch].contains(method)
    }

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

    /// The upstream's headers that go back to the caller, with `TokenVault-Proxy` saying the answer
    /// is the upstream's (and whether the token was refreshed and the call sent again). `tokens`:
    /// every token the call carried (after a refresh, the refused one too: an upstream may echo it).
    static func returned(
        _ headers: [(name: String, value: String)], tokens: [SecretBytes], refreshed: Bool
    ) -> HTTPFields {
        let named = connectionNames(
            headers.lazy.filter { $0.name.utf8.equalsIgnoringASCIICase(connectionName) }.map(\.value))
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count + 4)
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name) else { continue }
            let lowered = fieldName.canonicalName
            guard !notReturned.contains(lowered), named.isEmpty || !named.contains(lowered),
                !lowered.hasPrefix("tokenvault-"), !tokens.contains(where: { contains(value, $0) })
            else { continue }
            fields.append(HTTPField(name: fieldName, value: value))
        }
        // Appended: the upstream's own `TokenVault-*` fields were dropped above.
        fields.append(HTTPField(name: .tokenVaultProxy, value: refreshed ? "upstream; refreshed" : "upstream"))
        return fields
    }

    /// The header names a `Connection` header lists (hop-by-hop for this connection only),
    /// lower-cased; `keep-alive` and `close`, which every answer carries, name nothing.
    private static func connectionNames(_ values: some Sequence<String>) -> Set<String> {
        var names: Set<String> = []
        for value in values {
            for item in value.utf8.split(separator: UInt8(ascii: ",")) {
                let trimmed = item.trimmingSpacesAndTabs()
                // Compared as bytes first: nearly every answer says `keep-alive` and nothing else.
                guard !trimmed.equalsIgnoringASCIICase(keepAlive), !trimmed.equalsIgnoringASCIICase(close) else {
                    continue
                }
                names.insert(String(decoding: trimmed, as: UTF8.self).lowercased())
            }
        }
        return names
    }

    /// Whether a `Connection` header's value lists `close`.
    static func says(close value: String) -> Bool {
        value.utf8.split(separator: UInt8(ascii: ",")).contains { item in
            item.trimmingSpacesAndTabs().equalsIgnoringASCIICase(close)
        }
    }

    private static let connectionName = Array("connection".utf8)
    private static let keepAlive = Array("keep-alive".utf8)
    private static let close = Array("close".utf8)

    /// Whether `value` contains the token's bytes, as they are or percent-encoded in any case (a
    /// `Location` or `Link` URL carrying the token in its query writes `+`, `/` and `=` as `%2B`,
    /// `%2F` and `%3D`, and may escape any byte). Every header of every answer is searched, so it
    /// compares bytes in place, decoding escapes as it goes, rather than copying the value.
    static func contains(_ value: String, _ token: SecretBytes) -> Bool {
        guard token.count > 0, value.utf8.count >= token.count else { return false }
        var value = value
        return value.withUTF8 { text in
            token.withUnsafeBytes { secret in
                /// The byte at `index`, an escape decoded, and how many bytes of text it took.
                func byte(at index: Int) -> (value: UInt8, width: Int)? {
                    guard index < text.count else { return nil }
                    if text[index] == UInt8(ascii: "%"), index + 2 < text.count,
                        let high = HexDigit.value(text[index + 1]),
                        let low = HexDigit.value(text[index + 2])
                    {
                        return (high << 4 | low, 3)
                    }
                    return (text[index], 1)
                }
                for start in 0...(text.count - token.count) {
                    guard text[start] == secret[0] || text[start] == UInt8(ascii: "%") else { continue }
                    // As it is (a token may hold a literal `%`), then with escapes decoded.
                    if memcmp(text.baseAddress! + start, secret.baseAddress!, secret.count) == 0 { return true }
                    var (index, matched) = (start, 0)
                    while matched < secret.count, let next = byte(at: index), next.value == secret[matched] {
                        index += next.width
                        matched += 1
                    }
                    if matched == secret.count { return true }
                }
                return false
            }
        }
    }
}
