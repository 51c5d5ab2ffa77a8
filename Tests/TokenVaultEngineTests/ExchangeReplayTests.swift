import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultEngine

/// A code exchange's answer the courier still keeps after it was stored (the daemon died before
/// telling the courier it was safe) is recognised by its call key at the next start and not
/// applied again: that would replace a newer refresh with older tokens.
@Suite struct ExchangeReplayTests {
    /// What a courier keeps: the key and context of each keyed call until the daemon settles it.
    final class KeptAnswers: AnswerSettlement, Sendable {
        private let kept = Mutex<[String: SecretBytes?]>([:])

        func keep(_ call: ProviderCall) { kept.withLock { $0[call.key] = call.context } }
        func settle(_ key: String) { kept.withLock { _ = $0.removeValue(forKey: key) } }
        func spooled(prefix: String) -> [(key: String, context: SecretBytes?)] {
            kept.withLock { $0.filter { $0.key.hasPrefix(prefix) }.map { ($0.key, $0.value) } }
        }
    }

    /// A daemon's engine over the fixture's vault and provider, with `spool` as its courier.
    static func engine(_ fixture: EngineFixture, _ spool: KeptAnswers) -> RefreshEngine {
        RefreshEngine(
            vault: fixture.vault, providers: [fixture.provider.name: fixture.provider],
            settings: [fixture.provider.name: ProviderSettings(name: fixture.provider.name, kind: "oauth2")],
            settlement: spool, logger: fixture.logs.logger)
    }

    /// A code exchange for credential `id` of the fixture's provider.
    static func redemption(_ id: CredentialID, _ fixture: EngineFixture) -> CodeRedemption {
        CodeRedemption(
            provider: fixture.provider.name,
            request: CodeExchangeRequest(
                code: SecretBytes(utf8: "code"), codeVerifier: nil, redirectURI: "https://app.example/cb", state: nil,
                credentialID: id),
            nonce: nil, labels: [:],
            audit: AuditEvent(
                at: fixture.vault.clock.now, uid: 1000, gid: 1000, pid: 1, operation: .credentialExchange,
                credentialID: id, outcome: .allowed, detail: nil))
    }

    @Test func aSpooledExchangeStoredBeforeTheCrashDoesNotRollANewerRefreshBack() async throws {
        let fixture = try EngineFixture()
        let id = try CredentialID("tests/exchanged")
        let spool = KeptAnswers()
        func engine() -> RefreshEngine { Self.engine(fixture, spool) }
        let first = engine()
        let redemption = Self.redemption(id, fixture)
        guard case .committed(let stored) = try await first.redeem(redemption).stored else {
            Issue.record("the exchange was not stored")
            return
        }
        #expect(stored.generation == 1)
        // The courier never heard it was safe: its answer is still kept, as a spool file would be.
        spool.keep(try #require(fixture.provider.exchangeCalls.last))
        // A refresh since: newer tokens, generation 2.
        guard case .refreshed = try await first.refresh(id, reason: .forced) else {
            Issue.record("the refresh failed")
            return
        }
        let newer = try await fixture.secrets(id)
        let calls = fixture.provider.calls

        // The next daemon recovers the spool: the answer is recognised, settled, not applied.
        await engine().recoverSpool()
        await #expect(try fixture.metadata(id).generation == 2)
        await #expect(try fixture.secrets(id).accessToken == newer.accessToken)
        await #expect(try fixture.secrets(id).refreshToken == newer.refreshToken)
        #expect(spool.spooled(prefix: "exchange:").isEmpty)
        #expect(fixture.provider.calls == calls)
    }

    /// Recovering a spooled exchange, a failure before any answer was read (the request could
    /// not be built: a signer down, a discovery document unreachable) keeps the spooled answer,
    /// the tokens' only copy, for the next start; a provider's answer (a refused code) settles it.
    @Test func aRecoveryThatFailsBeforeAnyAnswerKeepsTheSpooledExchange() async throws {
        let fixture = try EngineFixture()
        let id = try CredentialID("tests/recovered")
        let spool = KeptAnswers()
        func engine() -> RefreshEngine { Self.engine(fixture, spool) }
        let redemption = Self.redemption(id, fixture)
        spool.keep(ProviderCall(key: "exchange:spooled", context: try SpooledExchange(redemption).encoded()))

        fixture.provider.script(
            .fail(ProviderFailure(kind: .transient, code: "signer_failed", message: "the signer is not running")))
        await engine().recoverSpool()
        #expect(spool.spooled(prefix: "exchange:").count == 1, "kept for the next start")

        fixture.provider.script(
            .fail(ProviderFailure(kind: .invalidGrant, code: "invalid_grant", message: "spent", httpStatus: 400)))
        await engine().recoverSpool()
        #expect(spool.spooled(prefix: "exchange:").isEmpty, "the provider answered: settled")
    }
}
