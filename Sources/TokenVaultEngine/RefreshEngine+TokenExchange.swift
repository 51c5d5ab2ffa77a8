import Foundation
import TokenVaultCore

/// RFC 8693 token exchange for callers: a token derived from a credential's, from the cache while
/// it lives (`DerivedTokens`), else from the provider, paced by the instance's gate like every
/// call to it. A refused exchange is the caller's answer and changes nothing on the credential:
/// the credential's own tokens were not spent.
extension RefreshEngine {
    public func exchangeToken(_ exchange: TokenExchange) async throws -> DerivedToken {
        let key = DerivedTokens.Key(
            credential: exchange.credential, createdAt: exchange.createdAt, generation: exchange.generation,
            request: exchange.request.canonical)
        if let cached = derivedTokens.token(for: key, now: vault.clock.now) {
            count(exchange.provider, "cached")
            return cached
        }
        let slot = enterSlot(exchange.provider)
        defer { slot?.leave() }
        guard let slot, let provider = slot.provider else {
            throw ProviderFailure.notConfigured(exchange.provider, listed: slot != nil)
        }
        let sentAt = vault.clock.now
        await slot.gate.acquire()
        defer { slot.gate.release() }
        let payload: TokenPayload
        do throws(ProviderFailure) {
            payload = try await provider.exchangeToken(
                exchange.request, subjectToken: exchange.subjectToken, for: exchange.credential)
        } catch {
            // A 400 is the caller's request's (an audience the server does not serve), not the
            // instance's configuration (`invalid_client` is a 401).
            count(exchange.provider, error.httpStatus == 400 ? "refused" : error.kind.rawValue)
            throw error
        }
        do throws(ProviderFailure) {
            try Self.refuseSubjectAnswered(payload, subject: exchange.subjectToken)
        } catch {
            count(exchange.provider, "refused")
            throw error
        }
        var issuedTokenType: String?
        if let extras = payload.secrets.extras,
            case .object(let fields)? = extras.withUnsafeBytes({
                try? JSONDecoder().decode(JSONValue.self, from: Data($0))
            }),
            case .string(let type)? = fields["issued_token_type"]
        {
            issuedTokenType = type
        }
        let derived = DerivedToken(
            accessToken: payload.secrets.accessToken, tokenType: payload.tokenType ?? "Bearer",
            issuedTokenType: issuedTokenType, expiresAt: payload.expiry.resolve(issuedAt: sentAt),
            scopes: payload.scopes.isEmpty ? exchange.request.scopes : payload.scopes)
        derivedTokens.keep(derived, for: key, now: vault.clock.now)
        count(exchange.provider, "derived")
        return derived
    }

    /// A server answering an exchange with the subject itself would hand a credential's own token
    /// to whoever may have only derived ones: a caller, an upstream meant for another audience, or
    /// a credential kept with other permissions. Refused, for callers' exchanges and kept grants
    /// alike.
    static func refuseSubjectAnswered(_ payload: TokenPayload, subject: SecretBytes) throws(ProviderFailure) {
        guard payload.secrets.accessToken != subject else {
            throw ProviderFailure(
                kind: .misconfigured, code: .malformedResponse,
                message: "the token endpoint answered the subject token itself; it is not used")
        }
    }

    private func count(_ provider: String, _ outcome: String) {
        statistics.record { $0.tokenExchanges[provider, default: [:]][outcome, default: 0] += 1 }
    }
}
