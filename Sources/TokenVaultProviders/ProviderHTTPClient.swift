import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import TokenVaultCore

/// The HTTP side every provider kind shares, so transport rules and error classification are
/// written once: a kind only says where to POST, which headers and form fields to send and
/// how to check the answer (`ProviderHTTPClient+Token.swift`).
///
/// It owns one `HTTPClient` on NIO's shared event loop group, so a slow or failing provider
/// never shares a connection pool with another; call `shutdown()` before dropping it.
final class ProviderHTTPClient: Sendable {
    struct Settings: Sendable {
        /// Connect and read timeout of each call, in seconds.
        var timeoutSeconds: Double
        /// A PEM bundle trusted in addition to the system roots.
        var caFile: String?
        /// Connections open at once, from the instance's `limits.concurrency`, so the engine's
        /// limit, not the HTTP client's default pool of 8, decides how many calls run together.
        var maximumConnections: Int
        /// A TLS client certificate and key (mutual TLS, as Sber ID requires).
        var clientIdentity: TLSClientIdentity?
    }

    let providerName: String
    let settings: Settings
    let logger: Logger
    private let client: HTTPClient
    private let isShutDown = Mutex(false)

    /// Bodies larger than this are not read: no token response or error document is that big.
    static let maximumBodySize = 1 << 20

    init(providerName: String, settings: Settings, logger: Logger) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = settings.caFile {
            tls.additionalTrustRoots = [.file(caFile)]
        }
        if let identity = settings.clientIdentity {
            tls.certificateChain = identity.certificateChain.map { .certificate($0) }
            tls.privateKey = .privateKey(identity.privateKey)
        }
        let timeout = TimeAmount.nanoseconds(Int64(settings.timeoutSeconds * 1e9))
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            // A redirect would carry the refresh token to wherever the answer points.
            redirectConfiguration: .disallow,
            timeout: .init(connect: timeout, read: timeout),
            decompression: .disabled)
        // Fail at once when the provider is unreachable: the engine owns retries and backoff.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = settings.maximumConnections
        // One transport error model (HTTP/1.1) to classify.
        configuration.httpVersion = .http1Only

        self.providerName = providerName
        self.settings = settings
        self.logger = logger
        self.client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    /// Closes the HTTP client. Safe to call more than once.
    func shutdown() async throws {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        try await client.shutdown()
    }

    /// POSTs a form (RFC 6749 and RFC 7009 requests are forms). `headers` come after the
    /// standard ones and replace them by name.
    func post(_ url: String, form: FormBody, headers: HTTPHeaders) async throws(ProviderFailure) -> HTTPAnswer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        addStandardHeaders(to: &request.headers)
        for (name, value) in headers { request.headers.replaceOrAdd(name: name, value: value) }
        request.headers.replaceOrAdd(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(bytes: form.bytes))
        return try await send(request)
    }

    func get(_ url: String) async throws(ProviderFailure) -> HTTPAnswer {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        addStandardHeaders(to: &request.headers)
        return try await send(request)
    }

    private func addStandardHeaders(to headers: inout HTTPHeaders) {
        // A fresh connection per call. On a kept-alive connection the server has just closed,
        // a request fails exactly like an answer lost after sending (unknown outcome) although
        // the provider never saw it. Refreshes are rare enough to afford a handshake each, and
        // then "refused" reliably means "not sent" and "closed" means "sent".
        headers.add(name: "Connection", value: "close")
        headers.add(name: "User-Agent", value: "tokenvault")
        headers.add(name: "Accept", value: "application/json")
    }

    /// Sends `request` and reads the whole answer. Connect and read timeouts are each
    /// `timeout_seconds`; the overall deadline is a backstop against a server trickling bytes.
    private func send(_ request: HTTPClientRequest) async throws(ProviderFailure) -> HTTPAnswer {
        let timeout = settings.timeoutSeconds
        let deadline = NIODeadline.now() + .nanoseconds(Int64((2 * timeout + 1) * 1e9))
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: deadline)
        } catch {
            throw ProviderErrorClassifier.transport(error, requestSent: true)
        }
        var headers: [String: String] = [:]
        for (name, value) in response.headers {
            let key = name.lowercased()
            headers[key] = headers[key].map { "\($0), \(value)" } ?? value
        }
        var answer = HTTPAnswer(status: Int(response.status.code), headers: headers, body: [])
        do {
            let buffer = try await response.body.collect(upTo: Self.maximumBodySize)
            answer.body = Array(buffer.readableBytesView)
        } catch is NIOTooManyBytesError {
            answer.bodyTooLarge = true
        } catch {
            throw ProviderErrorClassifier.transport(error, requestSent: true)
        }
        return answer
    }
}

/// One answer from a provider, its body read in full (or found too large).
struct HTTPAnswer: Sendable {
    var status: Int
    /// Lower-cased names; repeated headers joined with ", ".
    var headers: [String: String]
    var body: [UInt8]
    var bodyTooLarge = false
}

/// A TLS client certificate chain and its private key, as read from a PKCS#12 file.
public struct TLSClientIdentity: Sendable {
    public let certificateChain: [NIOSSLCertificate]
    public let privateKey: NIOSSLPrivateKey
}
