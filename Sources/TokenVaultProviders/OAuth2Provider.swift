import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import TokenVaultCore

/// A provider instance of kind `oauth2`: any RFC 6749 token endpoint, with RFC 7009
/// revocation and RFC 8414 / OIDC discovery.
///
/// It owns one `HTTPClient` on NIO's shared event loop group, so a slow or failing provider
/// never shares a connection pool with another; call `shutdown()` before dropping it.
/// Every failure comes out classified (`ProviderErrorClassifier`); no secret reaches a log,
/// an error message or a `description`.
public final class OAuth2Provider: TokenProvider, ShutdownableProvider {
    public let name: String
    public let configuration: OAuth2Configuration
    let client: HTTPClient
    let logger: Logger
    /// Discovered endpoints, fetched once; a failed fetch is retried on the next call.
    let discovery = Mutex<DiscoveryState>(.notStarted)
    private let isShutDown = Mutex(false)

    /// Bodies larger than this are not read: no token response or error document is that big.
    static let maximumBodySize = 1 << 20

    public convenience init(
        settings: ProviderSettings, environment: [String: String], logger: Logger = OAuth2Provider.silentLogger
    ) throws(ProviderConfigurationError) {
        try self.init(configuration: OAuth2Configuration(settings, environment: environment), logger: logger)
    }

    public init(configuration: OAuth2Configuration, logger: Logger = OAuth2Provider.silentLogger)
        throws(ProviderConfigurationError)
    {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile = configuration.caFile {
            tls.additionalTrustRoots = [.file(caFile)]
        }
        let timeout = TimeAmount.nanoseconds(Int64(configuration.timeoutSeconds * 1e9))
        var settings = HTTPClient.Configuration(
            tlsConfiguration: tls,
            // A redirect would carry the refresh token to wherever the answer points.
            redirectConfiguration: .disallow,
            timeout: .init(connect: timeout, read: timeout),
            decompression: .disabled)
        // Fail at once when the provider is unreachable: the engine owns retries and backoff.
        settings.connectionPool.retryConnectionEstablishment = false
        settings.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = configuration.maximumConnections
        // One transport error model (HTTP/1.1) to classify.
        settings.httpVersion = .http1Only

        self.name = configuration.providerName
        self.configuration = configuration
        self.logger = logger
        self.client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: settings)
    }

    /// A logger that drops everything, the default for callers that pass none.
    public static let silentLogger = Logger(label: "tokenvault.providers", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Closes the HTTP client. Safe to call more than once.
    public func shutdown() async throws {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        try await client.shutdown()
    }

    // MARK: TokenProvider

    public var supportsRevocation: Bool {
        switch configuration.endpoints {
        case .fixed(_, let revocation):
            return revocation != nil
        case .discovery:
            // Until the document is read, assume revocation exists: answering false would make
            // a delete skip revocation and leave the tokens alive at the provider.
            return discovery.withLock { state in
                if case .discovered(let endpoints) = state { return endpoints.revocation != nil }
                return true
            }
        }
    }

    public var clientID: String? { configuration.clientID }

    public func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload {
        var form = FormBody()
        form.append("grant_type", "refresh_token")
        form.append("refresh_token", secret: request.refreshToken)
        if configuration.sendScope, !request.scopes.isEmpty {
            form.append("scope", request.scopes.joined(separator: " "))
        }
        return try await tokenRequest(
            form, secrets: [request.refreshToken], operation: "refresh", credential: request.credentialID)
    }

    /// RFC 6749 section 4.1.3 with PKCE: `grant_type=authorization_code`, `code`, `redirect_uri`,
    /// `code_verifier`, and `client_id` (always in the body, as public clients must send it).
    public func exchange(_ request: CodeExchangeRequest) async throws(ProviderFailure) -> TokenPayload {
        var form = FormBody()
        form.append("grant_type", "authorization_code")
        form.append("code", secret: request.code)
        form.append("redirect_uri", request.redirectURI)
        if let verifier = request.codeVerifier { form.append("code_verifier", secret: verifier) }
        if configuration.clientAuthentication == .clientSecretBasic { form.append("client_id", configuration.clientID) }
        return try await tokenRequest(
            form, secrets: [request.code] + (request.codeVerifier.map { [$0] } ?? []), operation: "exchange",
            credential: request.credentialID)
    }

    /// POSTs a token request (client authentication added) and reads the token response.
    private func tokenRequest(
        _ form: FormBody, secrets sent: [SecretBytes], operation: String, credential: CredentialID
    )
        async throws(ProviderFailure) -> TokenPayload
    {
        let endpoints = try await resolveEndpoints()
        let secrets = sent + (configuration.clientSecret.map { [$0] } ?? [])
        let answer = try await post(endpoints.token, form: form, redacting: secrets)
        do throws(ProviderFailure) {
            guard (200..<300).contains(answer.status) else {
                throw ProviderErrorClassifier.classify(
                    status: answer.status, headers: answer.headers, body: answer.body, now: Date(), redacting: secrets)
            }
            if answer.bodyTooLarge {
                throw ProviderErrorClassifier.malformedResponse(
                    status: answer.status, detail: "the body is larger than \(Self.maximumBodySize) bytes")
            }
            return try TokenResponseReader.read(
                status: answer.status, headers: answer.headers, body: answer.body, now: Date(), redacting: secrets)
        } catch {
            log(error, operation: operation, credential: credential)
            throw error
        }
    }

    public func revoke(_ token: SecretBytes, hint: TokenHint) async throws(ProviderFailure) {
        let endpoints = try await resolveEndpoints()
        guard let revocation = endpoints.revocation else {
            throw ProviderFailure(
                kind: .misconfigured, code: "revocation_not_supported",
                message: "provider '\(name)' has no revocation endpoint")
        }
        var form = FormBody()
        form.append("token", secret: token)
        form.append("token_type_hint", hint.rawValue)
        let secrets = [token] + (configuration.clientSecret.map { [$0] } ?? [])
        let answer = try await post(revocation, form: form, redacting: secrets)
        // RFC 7009 §2.2: any 2xx is success, whatever the body ({}, "OK", nothing).
        guard (200..<300).contains(answer.status) else {
            let failure = ProviderErrorClassifier.classify(
                status: answer.status, headers: answer.headers, body: answer.body, now: Date(), redacting: secrets)
            log(failure, operation: "revoke", credential: nil)
            throw failure
        }
    }

    private func log(_ failure: ProviderFailure, operation: String, credential: CredentialID?) {
        var metadata: Logger.Metadata = [
            "tokenvault.provider": "\(name)", "tokenvault.provider.operation": "\(operation)",
            "tokenvault.failure.kind": "\(failure.kind.rawValue)", "tokenvault.failure.code": "\(failure.code)",
        ]
        if let credential { metadata["tokenvault.credential.id"] = "\(credential)" }
        logger.debug("provider call failed: \(failure.message)", metadata: metadata)
    }
}
