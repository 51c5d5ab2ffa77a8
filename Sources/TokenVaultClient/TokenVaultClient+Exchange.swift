import Foundation
import NIOCore

/// Server-side code exchange.
extension TokenVaultClient {
    /// What the daemon answers to an exchange: the stored credential and its access token.
    public struct ExchangeResult: Decodable, Sendable {
        public var credential: CredentialMetadata
        public var token: AccessToken
    }

    /// `POST /v1/credentials/{namespace}/{name}/exchange`: the daemon redeems `code` with the
    /// PKCE `codeVerifier` at provider instance `provider`, checks the id token (nonce,
    /// audience, expiry) and stores the result. Never returns the refresh token.
    public func exchange(
        _ id: String, provider: String, code: String, codeVerifier: String, redirectURI: String, nonce: String? = nil,
        state: String? = nil, labels: [String: String] = [:]
    ) async throws -> (result: ExchangeResult, created: Bool) {
        struct Body: Encodable {
            let provider: String
            let code: String
            let codeVerifier: String
            let redirectURI: String
            let nonce: String?
            let state: String?
            let labels: [String: String]
            enum CodingKeys: String, CodingKey {
                case provider, code, codeVerifier = "code_verifier", redirectURI = "redirect_uri", nonce, state, labels
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = try encoder.encode(
            Body(
                provider: provider, code: code, codeVerifier: codeVerifier, redirectURI: redirectURI, nonce: nonce,
                state: state, labels: labels))
        let reply = try await send(
            .post, try Self.credentialPath(id, "/exchange"), body: ByteBuffer(bytes: body), expecting: [200, 201],
            timeout: .seconds(60))
        return (try reply.decode(ExchangeResult.self), reply.status == 201)
    }
}
