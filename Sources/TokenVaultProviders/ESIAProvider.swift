import Foundation
import Logging
import TokenVaultCore

/// A provider instance of kind `esia` (Gosuslugi). Every token request carries a fresh `state`
/// (UUID) and `timestamp`, and a `client_secret` signed over them by the operator's signer
/// (`ESIAClientSecret`). If signing fails, nothing is sent.
///
/// ESIA echoes `state`; an answer with another state (or none) is not ours to trust, but the
/// provider may have acted on our request and rotated the refresh token, so it is an unknown
/// outcome (`state_mismatch`) and nothing from it is returned. ESIA has no revocation API.
public final class ESIAProvider: TokenProvider, ShutdownableProvider {
    public let name: String
    public let configuration: ESIAConfiguration
    let http: ProviderHTTPClient
    let clientSecret: ESIAClientSecret

    public convenience init(
        settings: ProviderSettings, environment: [String: String] = [:], logger: Logger = OAuth2Provider.silentLogger
    ) throws(ProviderConfigurationError) {
        self.init(configuration: try ESIAConfiguration(settings), logger: logger)
    }

    public init(
        configuration: ESIAConfiguration, transport: (any ProviderTransport)? = nil,
        logger: Logger = OAuth2Provider.silentLogger
    ) {
        self.name = configuration.providerName
        self.configuration = configuration
        self.http = ProviderHTTPClient(
            providerName: configuration.providerName,
            transport: transport ?? DirectTransport(settings: configuration.httpSettings), logger: logger)
        self.clientSecret = ESIAClientSecret(
            signer: ExternalCommand(
                arguments: configuration.signerCommand, timeoutSeconds: configuration.signerTimeoutSeconds))
    }

    public func shutdown() async throws { try await http.shutdown() }

    public var supportsRevocation: Bool { false }
    public var clientID: String? { configuration.clientID }

    /// `client_id, grant_type=refresh_token, refresh_token, state, timestamp, client_secret,
    /// scope, redirect_uri, token_type=Bearer, client_certificate_hash`.
    public func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload {
        try await token(
            grant: { form in
                form.append("grant_type", "refresh_token")
                form.append("refresh_token", secret: request.refreshToken)
            }, state: Self.newState(), redirectURI: configuration.redirectURI, secrets: [request.refreshToken],
            operation: "refresh", credential: request.credentialID, call: request.call)
    }

    /// `client_id, grant_type=authorization_code, code, code_verifier, state, timestamp,
    /// client_secret, scope, redirect_uri, token_type=Bearer, client_certificate_hash`; `state` is
    /// the authorization response's when the caller has it.
    public func exchange(_ request: CodeExchangeRequest) async throws(ProviderFailure) -> TokenPayload {
        try await token(
            grant: { form in
                form.append("grant_type", "authorization_code")
                form.append("code", secret: request.code)
                if let verifier = request.codeVerifier { form.append("code_verifier", secret: verifier) }
            }, state: request.state ?? Self.newState(), redirectURI: request.redirectURI,
            secrets: [request.code] + (request.codeVerifier.map { [$0] } ?? []), operation: "exchange",
            credential: request.credentialID, call: request.call)
    }

    public func revoke(_ token: SecretBytes, hint: TokenHint, call: ProviderCall?) async throws(ProviderFailure) {
        throw .revocationNotSupported(name, kind: "esia")
    }

    /// Signs first (a failed signature sends nothing), then POSTs the form in ESIA's order.
    private func token(
        grant: (inout FormBody) -> Void, state: String, redirectURI: String, secrets: [SecretBytes],
        operation: String, credential: CredentialID, call: ProviderCall?
    ) async throws(ProviderFailure) -> TokenPayload {
        let timestamp = ESIAClientSecret.timestamp(Date())
        let signature: SecretBytes
        do {
            signature = try await clientSecret.sign(
                ESIAClientSecret.stringToSign(
                    clientID: configuration.clientID, scope: configuration.scope, timestamp: timestamp, state: state,
                    redirectURI: redirectURI))
        } catch {
            http.log(error, operation: operation, credential: credential)
            throw error
        }
        var form = FormBody()
        form.append("client_id", configuration.clientID)
        grant(&form)
        form.append("state", state)
        form.append("timestamp", timestamp)
        form.append("client_secret", secret: signature)
        form.append("scope", configuration.scope)
        form.append("redirect_uri", redirectURI)
        form.append("token_type", "Bearer")
        form.append("client_certificate_hash", configuration.clientCertificateHash)
        return try await http.token(
            TokenCall(
                url: configuration.tokenEndpoint, form: form, secrets: secrets + [signature], operation: operation,
                credential: credential,
                check: { fields throws(ProviderFailure) in try Self.checkState(fields, sent: state) },
                providerCall: call))
    }

    /// The answer's `state` must be the one this request sent.
    static func checkState(_ fields: [String: JSONValue], sent: String) throws(ProviderFailure) {
        guard case .string(let echoed)? = fields["state"] else {
            throw stateMismatch("the token response has no state")
        }
        guard echoed == sent else { throw stateMismatch("the token response's state is not the one sent") }
    }

    private static func stateMismatch(_ detail: String) -> ProviderFailure {
        ProviderFailure(
            kind: .unknownOutcome, code: .stateMismatch,
            message: "\(detail): the answer is not trusted and nothing from it is used; ESIA may have "
                + "rotated the refresh token")
    }

    /// A new lower-case UUID.
    static func newState() -> String { UUID().uuidString.lowercased() }
}
