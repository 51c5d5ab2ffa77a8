import AsyncHTTPClient
import Foundation
import NIOCore

/// An API call made through the daemon's proxy with a credential's token, which this process
/// never sees (`credential:use` is enough).
extension TokenVaultClient {
    /// The upstream's answer: its status and headers, and its body still streaming.
    public struct UpstreamAnswer: Sendable {
        public let status: Int
        /// In order, as the daemon passed them on.
        public let headers: [UpstreamHeader]
        /// The body as it arrives (read it, or drop the answer to abandon it).
        public let body: HTTPClientResponse.Body
        /// The token was refused once, refreshed, and the call sent again.
        public let refreshed: Bool

        /// The first header named `name` (any case).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
    }

    public struct UpstreamHeader: Sendable, Equatable {
        public let name: String
        public let value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// A credential this process may use through the proxy, and where (`GET /v1/proxy/credentials`).
    public struct UsableCredential: Sendable, Decodable, Equatable {
        public let id: String
        public let provider: String
        public let status: String
        public let apiBaseURLs: [String]
        enum CodingKeys: String, CodingKey { case id, provider, status, apiBaseURLs = "api_base_urls" }
    }

    private struct UsablePage: Decodable {
        let items: [UsableCredential]
        let nextCursor: String?
        enum CodingKeys: String, CodingKey { case items, nextCursor = "next_cursor" }
    }

    /// Every credential this process may use through the proxy (in `namespace`, if given),
    /// following cursors page by page.
    public func usableCredentials(namespace: String? = nil) async throws -> [UsableCredential] {
        try await allPages { cursor in
            let page = try await send(
                .get, "/v1/proxy/credentials", query: [("namespace", namespace), ("cursor", cursor), ("limit", "500")]
            ).decode(UsablePage.self)
            return (page.items, page.nextCursor)
        }
    }

    /// What to send: the whole body in memory, or a stream of it (with its length when known).
    public enum CallBody: Sendable {
        case bytes(ByteBuffer)
        case stream(AsyncThrowingStream<ByteBuffer, any Error>, length: Int?)
    }

    /// Whether `text` is an HTTP method as RFC 9110 spells one (a token: letters, digits and
    /// ``!#$%&'*+-.^_`|~``, nothing else), so no space, line break or control character reaches
    /// the request line.
    static func isHTTPToken(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }

    /// Sends `method target` through the proxy with `id`'s token attached. `target` is a URL
    /// (`https://api.bank.example/v1/x`), which must lie inside the credential's provider
    /// instance's `api_base_urls`, or a path (`/v1/x?y=1`) under the first of them. Whatever the
    /// upstream answers is returned, errors included; the daemon's own refusals (not allowed,
    /// too many calls, unreachable upstream) throw `TokenVaultClientError.problem`.
    public func call(
        _ id: String, method: String, _ target: String, headers: [UpstreamHeader] = [], body: CallBody? = nil,
        timeout: Duration = .seconds(120)
    ) async throws -> UpstreamAnswer {
        guard Self.isHTTPToken(method) else {
            throw TokenVaultClientError.invalidArgument(
                "the method is not an HTTP method (letters, digits and !#$%&'*+-.^_`|~ only)")
        }
        let absolute = !target.hasPrefix("/") && target.contains("://")
        guard absolute || target.hasPrefix("/") else {
            throw TokenVaultClientError.invalidArgument(
                "'\(target.prefix(200))' is neither a URL nor a path starting with /")
        }
        let path = try Self.credentialPath(id, absolute ? "/proxy" : "/proxy" + target)
        guard let url = URL(httpURLWithSocketPath: socketPath, uri: path) else {
            throw TokenVaultClientError.invalidArgument("'\(target.prefix(200))' cannot be sent as a path")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .init(rawValue: method.uppercased())
        for header in headers { request.headers.add(name: header.name, value: header.value) }
        if absolute { request.headers.replaceOrAdd(name: "TokenVault-Upstream-URL", value: target) }
        switch body {
        case .bytes(let buffer)?: request.body = .bytes(buffer)
        case .stream(let stream, let length)?:
            request.body = .stream(stream, length: length.map { .known(Int64($0)) } ?? .unknown)
        case nil: break
        }
        let response: HTTPClientResponse
        do {
            response = try await http.execute(request, deadline: .now() + TimeAmount(timeout))
        } catch {
            throw translate(error)
        }
        guard let marker = response.headers.first(name: "TokenVault-Proxy"), marker.hasPrefix("upstream") else {
            let bytes = (try? await response.body.collect(upTo: 1 << 20)) ?? ByteBuffer()
            throw failure(status: Int(response.status.code), body: bytes, route: "\(method.uppercased()) \(path)")
        }
        return UpstreamAnswer(
            status: Int(response.status.code),
            headers: response.headers.filter { $0.name.lowercased() != "tokenvault-proxy" }.map {
                UpstreamHeader(name: $0.name, value: $0.value)
            },
            body: response.body, refreshed: marker.contains("refreshed"))
    }
}
