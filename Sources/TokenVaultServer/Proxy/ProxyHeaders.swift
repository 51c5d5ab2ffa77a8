import Foundation
import HTTPTypes
import TokenVaultCore

/// Which headers pass the proxy, each way. Pure.
///
/// Upstream: the caller's headers that `ForwardedHeaders.standard` or the instance's
/// `proxy_headers` name, except any the caller's `Connection` header names (hop-by-hop for its
/// connection only). Everything else stays behind: the caller's own credentials, framing and
/// hop-by-hop headers, and whatever a server or gateway might read as the request's real path.
/// Back: everything the upstream sent except hop-by-hop headers, `Set-Cookie` (a session cookie
/// is a credential the caller is not meant to hold) and any header whose value contains the
/// access token.
enum ProxyHeaders {
    /// Whether the upstream connection ends with this call, because the upstream may not have
    /// read all of the body: a body on a method that defines none (GET, DELETE), which an
    /// upstream may ignore, or a streamed body (no `Content-Length`, or one too large to keep),
    /// which the upstream may begin to answer before it has all arrived. What it left unread
    /// would be read as the start of the next request on the connection. Connections are kept
    /// per credential and caller (`UpstreamClients`), so that request could only be the same
    /// caller's; ending the connection leaves nothing for it at all.
    static func endsConnection(method: HTTPRequest.Method, hasBody: Bool, streamed: Bool) -> Bool {
        streamed || hasBody && ![.post, .put, .patch].contains(method)
    }

    /// Lower-cased names never returned to the caller.
    static let notReturned: Set<String> = [
        "connection", "keep-alive", "proxy-authenticate", "proxy-connection", "te", "trailer", "trailers",
        "transfer-encoding", "upgrade", "set-cookie", "set-cookie2",
    ]

    /// The caller's headers that go upstream, in order: those `ForwardedHeaders.standard` or
    /// `added` (the instance's `proxy_headers`) name.
    static func forward(_ fields: HTTPFields, adding added: Set<String> = []) -> [(name: String, value: String)] {
        let named = connectionNames(fields.filter { $0.name == .connection }.map(\.value))
        return fields.compactMap { field in
            let name = field.name.canonicalName
            guard ForwardedHeaders.standard.contains(name) || added.contains(name), !named.contains(name) else {
                return nil
            }
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
        let redaction = TokenRedaction(tokens: tokens)
        var fields = HTTPFields()
        fields.reserveCapacity(headers.count + 4)
        for (name, value) in headers {
            guard let fieldName = HTTPField.Name(name) else { continue }
            let lowered = fieldName.canonicalName
            guard !notReturned.contains(lowered), named.isEmpty || !named.contains(lowered),
                !lowered.hasPrefix("tokenvault-"), !redaction.isFound(in: value)
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

    private static let connectionName = Array("connection".utf8)
    private static let keepAlive = Array("keep-alive".utf8)
    private static let close = Array("close".utf8)
}
