import Logging
import TokenVaultCore

/// A provider instance of any kind: the one shell every kind shares (the instance name, the HTTP
/// client over the instance's transport, sending, failure logging and shutdown) over the kind's
/// own requests (`ProviderWire`). `OAuth2Provider`, `TinkoffIDProvider`, `SberIDProvider` and
/// `ESIAProvider` are this over their wires. No secret reaches a log, an error message or a
/// `description`. Call `shutdown()` before dropping it.
public final class KindProvider<Wire: ProviderWire>: TokenProvider, ShutdownableProvider {
    public let name: String
    public let wire: Wire
    let http: ProviderHTTPClient

    public var configuration: Wire.Configuration { wire.configuration }

    /// `transport`: how requests leave (the courier's in the daemon); direct by default.
    /// `services`: the daemon's signatures, keys and kept metadata; without it an `oauth2` instance checks no
    /// id-token signature and cannot sign client assertions.
    public init(
        configuration: Wire.Configuration, transport: (any ProviderTransport)? = nil,
        services: ProviderServices? = nil, logger: Logger = ProviderLog.silent
    ) {
        name = configuration.providerName
        wire = Wire(configuration: configuration, services: services)
        http = ProviderHTTPClient(
            providerName: configuration.providerName,
            transport: transport ?? DirectTransport(settings: configuration.httpSettings), logger: logger)
    }

    public convenience init(
        settings: ProviderSettings, environment: [String: String], transport: (any ProviderTransport)? = nil,
        logger: Logger = ProviderLog.silent
    ) throws(ProviderConfigurationError) {
        self.init(
            configuration: try Wire.Configuration(settings, environment: environment), transport: transport,
            logger: logger)
    }

    /// Closes the HTTP client. Safe to call more than once.
    public func shutdown() async throws { try await http.shutdown() }

    public var supportsRevocation: Bool { wire.supportsRevocation }
    public var clientID: String? { configuration.clientID }

    public func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload {
        try await token(operation: "refresh", credential: request.credentialID, call: request.call) {
            () async throws(ProviderFailure) -> TokenCall in try await wire.refreshCall(request, over: http)
        }
    }

    public func exchange(_ request: CodeExchangeRequest) async throws(ProviderFailure) -> TokenPayload {
        try await token(operation: "exchange", credential: request.credentialID, call: request.call) {
            () async throws(ProviderFailure) -> TokenCall in try await wire.exchangeCall(request, over: http)
        }
    }

    public func exchangeToken(
        _ request: TokenExchangeRequest, subjectToken: SecretBytes, for credential: CredentialID
    ) async throws(ProviderFailure) -> TokenPayload {
        try await token(operation: "token_exchange", credential: credential, call: nil) {
            () async throws(ProviderFailure) -> TokenCall in
            guard let call = try await wire.tokenExchangeCall(request, subjectToken: subjectToken, over: http) else {
                throw ProviderFailure(
                    kind: .misconfigured, code: .tokenExchangeNotSupported,
                    message: "provider instance \(name) of kind \(Wire.kind) cannot exchange tokens (RFC 8693)")
            }
            return call
        }
    }

    public func obtain(_ request: GrantRequest) async throws(ProviderFailure) -> TokenPayload {
        try await token(operation: "grant", credential: request.credentialID, call: request.call) {
            () async throws(ProviderFailure) -> TokenCall in
            guard let call = try await wire.grantCall(request, over: http) else {
                throw ProviderFailure(
                    kind: .misconfigured, code: .grantNotSupported,
                    message: "provider instance \(name) of kind \(Wire.kind) cannot obtain tokens by a client "
                        + "credentials grant")
            }
            return call
        }
    }

    public func revoke(_ token: SecretBytes, hint: TokenHint, call: ProviderCall?) async throws(ProviderFailure) {
        let revocation: RevocationCall?
        do throws(ProviderFailure) {
            revocation = try await wire.revocationCall(token, hint: hint, over: http)
        } catch {
            http.log(error, operation: "revoke", credential: nil)
            throw error
        }
        guard let revocation else { throw .revocationNotSupported(name, kind: Wire.kind) }
        do throws(ProviderFailure) {
            try await http.revoke(
                revocation.url, form: revocation.form, headers: revocation.headers, secrets: revocation.secrets,
                call: call)
        } catch {
            wire.noteFailure(error)
            throw error
        }
    }

    /// Builds the kind's request (a failure to build it, a signer's or a discovery's, is logged
    /// like a failed call, and nothing is sent), then sends it under `call` and reads the answer.
    private func token(
        operation: String, credential: CredentialID, call: ProviderCall?,
        _ build: () async throws(ProviderFailure) -> TokenCall
    ) async throws(ProviderFailure) -> TokenPayload {
        var tokenCall: TokenCall
        do throws(ProviderFailure) {
            tokenCall = try await build()
        } catch {
            http.log(error, operation: operation, credential: credential)
            throw error
        }
        tokenCall.operation = operation
        tokenCall.credential = credential
        tokenCall.providerCall = call
        var payload: TokenPayload
        do throws(ProviderFailure) {
            payload = try await http.token(tokenCall)
        } catch {
            wire.noteFailure(error)
            throw error
        }
        await wire.vet(&payload, over: http)
        return payload
    }
}

/// The providers' logging defaults.
public enum ProviderLog {
    /// A logger that drops everything, the default for callers that pass none.
    public static let silent = Logger(label: "tokenvault.providers", factory: { _ in SwiftLogNoOpLogHandler() })
}
