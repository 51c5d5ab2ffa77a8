import Foundation
import TokenVaultCore

/// A provider instance of kind `esia` (Gosuslugi).
public typealias ESIAProvider = KindProvider<ESIAWire>

/// The requests of kind `esia`. Every token request carries a fresh `state` (UUID) and
/// `timestamp`, and a `client_secret` signed over them by the operator's signer
/// (`ESIAClientSecret`). If signing fails, nothing is sent.
///
/// ESIA echoes `state`; an answer with another state (or none) is not ours to trust, but the
/// provider may have acted on our request and rotated the refresh token, so it is an unknown
/// outcome (`state_mismatch`) and nothing from it is returned. ESIA has no revocation API.
public struct ESIAWire: ProviderWire {
    public static let kind = "esia"
    public let configuration: ESIAConfiguration
    let clientSecret: ESIAClientSecret

    public init(configuration: ESIAConfiguration) {
        self.configuration = configuration
        clientSecret = ESIAClientSecret(
            signer: ExternalCommand(
                arguments: configuration.signerCommand, timeoutSeconds: configuration.signerTimeoutSeconds))
    }

    public var supportsRevocation: Bool { false }

    /// `client_id, grant_type=refresh_token, refresh_token, state, timestamp, client_secret,
    /// scope, redirect_uri, token_type=Bearer, client_certificate_hash`.
    public func refreshCall(_ request: RefreshRequest, over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> TokenCall
    {
        try await call(
            grant: { form in
                form.append("grant_type", "refresh_token")
                form.append("refresh_token", secret: request.refreshToken)
            }, state: Self.newState(), redirectURI: configuration.redirectURI, secrets: [request.refreshToken])
    }

    /// `client_id, grant_type=authorization_code, code, code_verifier, state, timestamp,
    /// client_secret, scope, redirect_uri, token_type=Bearer, client_certificate_hash`; `state` is
    /// the authorization response's when the caller has it.
    public func exchangeCall(_ request: CodeExchangeRequest, over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> TokenCall
    {
        try await call(
            grant: { form in
                form.append("grant_type", "authorization_code")
                form.append("code", secret: request.code)
                if let verifier = request.codeVerifier { form.append("code_verifier", secret: verifier) }
            }, state: request.state ?? Self.newState(), redirectURI: request.redirectURI,
            secrets: [request.code] + (request.codeVerifier.map { [$0] } ?? []))
    }

    public func revocationCall(_ token: SecretBytes, hint: TokenHint, over http: ProviderHTTPClient)
        -> RevocationCall?
    { nil }

    /// Signs first (a failed signature sends nothing), then the form in ESIA's order.
    private func call(
        grant: (inout FormBody) -> Void, state: String, redirectURI: String, secrets: [SecretBytes]
    ) async throws(ProviderFailure) -> TokenCall {
        let timestamp = ESIAClientSecret.timestamp(Date())
        let signature = try await clientSecret.sign(
            ESIAClientSecret.stringToSign(
                clientID: configuration.clientID, scope: configuration.scope, timestamp: timestamp, state: state,
                redirectURI: redirectURI))
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
        return TokenCall(
            url: configuration.tokenEndpoint, form: form, secrets: secrets + [signature],
            check: { fields throws(ProviderFailure) in try Self.checkState(fields, sent: state) })
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
