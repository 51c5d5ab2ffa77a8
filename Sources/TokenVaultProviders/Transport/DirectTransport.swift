import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import TokenVaultCore

/// Sends provider requests from this process with AsyncHTTPClient: one `HTTPClient` per
/// provider instance on NIO's shared event loop group, so a slow or failing provider never shares
/// a connection pool with another. The courier uses it; so do tests and anything without one.
///
/// Connections are kept for `keepAliveSeconds` after a call and reused (one TCP and TLS
/// handshake for many refreshes). What that changes for the rules of unknown outcomes: a call on
/// a kept connection that the server closed just then fails like an answer lost after sending,
/// and the engine retries it with the same refresh token, which is right, since the provider never
/// saw it. A connection that failed is closed by the pool, never handed to a retry. Refused still
/// means not sent (a refused connect is a new one).
public final class DirectTransport: ProviderTransport {
    public let settings: TransportSettings
    private let client: HTTPClient
    private let isShutDown = Mutex(false)

    public init(settings: TransportSettings) {
        var configuration = settings.clientConfiguration()
        // Fail at once when the provider is unreachable: the engine owns retries and backoff.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = settings.maximumConnections
        if settings.keepAliveSeconds > 0 {
            configuration.connectionPool.idleTimeout = .nanoseconds(Int64(settings.keepAliveSeconds * 1e9))
        }
        self.settings = settings
        self.client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    public func shutdown() async throws {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        try await client.shutdown()
    }

    /// Connect and read timeouts as the instance says (`CallTimeouts`); the overall deadline is a
    /// backstop against a server trickling bytes.
    /// `call` is the courier's business: a direct transport keeps nothing.
    public func send(_ prepared: PreparedRequest, call: ProviderCall?) async throws(ProviderFailure) -> HTTPAnswer {
        var request = HTTPClientRequest(url: prepared.url)
        request.method = HTTPMethod(rawValue: prepared.method)
        for field in prepared.headers { request.headers.add(name: field.name, value: field.value) }
        if settings.keepAliveSeconds == 0 { request.headers.replaceOrAdd(name: "Connection", value: "close") }
        if !prepared.body.isEmpty { request.body = .bytes(ByteBuffer(bytes: prepared.body)) }
        let deadline = NIODeadline.now() + .nanoseconds(Int64(settings.callDeadlineSeconds * 1e9))
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: deadline)
        } catch {
            throw ProviderErrorClassifier.transport(error, requestSent: true)
        }
        var answer = HTTPAnswer(status: Int(response.status.code), headers: [:], body: [])
        for (name, value) in response.headers { answer.addHeader(name: name, value: value) }
        do {
            var buffer = try await response.body.collect(upTo: HTTPAnswer.maximumBodySize)
            answer.body = Array(buffer.readableBytesView)
            buffer.withUnsafeMutableReadableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
        } catch is NIOTooManyBytesError {
            answer.bodyTooLarge = true
        } catch {
            throw ProviderErrorClassifier.transport(error, requestSent: true)
        }
        return answer
    }
}

extension TransportSettings {
    /// An HTTP client's configuration for these settings: TLS (`ca_file`, the client certificate),
    /// connect and read timeouts, HTTP/1.1 only (one transport error model to classify), no
    /// decompression and no redirects (a redirect would carry the token to wherever it points).
    func clientConfiguration() -> HTTPClient.Configuration {
        let tls = tlsConfiguration()
        func amount(_ seconds: Double) -> TimeAmount { .nanoseconds(Int64(seconds * 1e9)) }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls, redirectConfiguration: .disallow,
            timeout: .init(connect: amount(timeouts.connectSeconds), read: amount(timeouts.readSeconds)),
            decompression: .disabled)
        configuration.httpVersion = .http1Only
        return configuration
    }

    /// Whom to trust (the system roots, or `ca_file` instead of them, or both with
    /// `trust_system_roots`) and which client certificate to present: the one TLS configuration
    /// of an instance, for its HTTP clients and the proxy's own connections alike, and of a
    /// webhook endpoint.
    func tlsConfiguration() -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile {
            if trustsSystemRoots {
                tls.additionalTrustRoots = [.file(caFile)]
            } else {
                tls.trustRoots = .file(caFile)
            }
        }
        if let clientIdentity {
            tls.certificateChain = clientIdentity.certificateChain.map { .certificate($0) }
            tls.privateKey = .privateKey(clientIdentity.privateKey)
        }
        return tls
    }
}

/// A TLS client certificate chain and its private key, as read from a PKCS#12 file.
public struct TLSClientIdentity: Sendable, Equatable {
    public let certificateChain: [NIOSSLCertificate]
    public let privateKey: NIOSSLPrivateKey
}
