import Foundation
import Testing
import TokenVaultCore
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

/// Pending sign-ins on both backends: kept sealed under the state's fingerprint, taken once,
/// capped per caller, pruned once expired; the store never holds the state or the verifier.
extension StorageContractTests {
    static func pending(_ id: String, uid: UInt32, at now: Timestamp, lifetime: Double = 600) throws
        -> PendingAuthorization
    {
        PendingAuthorization(
            credentialID: try CredentialID(id), provider: "idp", redirectURI: "https://app.example/cb",
            scopes: ["openid"], codeVerifier: SecretBytes(utf8: "verifier-\(id)-0123456789012345678901234567"),
            nonce: "nonce-\(id)", labels: ["team": "a"], uid: uid, gid: 7, createdAt: now,
            expiresAt: now.adding(seconds: lifetime))
    }

    @Test(arguments: TestBackendKind.allCases)
    func aPendingSignInIsKeptSealedAndTakenOnce(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let now = fixture.clock.now
        let state = SecretBytes(utf8: "state-of-the-sign-in-0123456789")
        #expect(
            try await fixture.vault.keepAuthorization(Self.pending("pay/a", uid: 1000, at: now), state: state, limit: 5)
        )
        // Another node (a second connection) finds it by the state alone.
        let other = try fixture.open()
        defer { other.backend.close() }
        let otherVault = Vault(store: other.backend, sealer: fixture.keyring, clock: fixture.clock)
        await #expect(try otherVault.takeAuthorization(state: SecretBytes(utf8: "another state")) == nil)
        let taken = try #require(try await otherVault.takeAuthorization(state: state))
        #expect(taken.credentialID.description == "pay/a" && taken.uid == 1000 && taken.gid == 7)
        #expect(taken.nonce == "nonce-pay/a" && taken.labels == ["team": "a"] && taken.scopes == ["openid"])
        #expect(taken.codeVerifier.revealString() == "verifier-pay/a-0123456789012345678901234567")
        #expect(taken.expiresAt == now.adding(seconds: 600))
        await #expect(try fixture.vault.takeAuthorization(state: state) == nil)
    }

    @Test(arguments: TestBackendKind.allCases)
    func eachCallerIsCappedAndExpiredSignInsArePruned(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let now = fixture.clock.now
        func keep(_ n: Int, uid: UInt32, lifetime: Double = 600) async throws -> Bool {
            try await fixture.vault.keepAuthorization(
                Self.pending("pay/c\(n)", uid: uid, at: fixture.clock.now, lifetime: lifetime),
                state: SecretBytes(utf8: "state-\(n)-\(kind)"), limit: 2)
        }
        #expect(try await keep(1, uid: 1000, lifetime: 30))
        #expect(try await keep(2, uid: 1000))
        #expect(try await !keep(3, uid: 1000))
        #expect(try await keep(4, uid: 1001))
        #expect(try await keep(5, uid: 1002))
        fixture.clock.set(now.adding(seconds: 31))
        // The first expired: it is pruned, and no longer counts.
        #expect(try await keep(6, uid: 1000))
        await #expect(try fixture.vault.takeAuthorization(state: SecretBytes(utf8: "state-1-\(kind)")) == nil)
        await #expect(try fixture.vault.takeAuthorization(state: SecretBytes(utf8: "state-2-\(kind)")) != nil)
    }

    /// A rotation while a sign-in waits keeps the term it is sealed under, so it still opens;
    /// the term goes at the next rotation once the sign-in is finished.
    @Test(arguments: TestBackendKind.allCases)
    func aRotationKeepsTheTermOfAPendingSignIn(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let state = SecretBytes(utf8: "state-across-a-rotation-0123456789")
        let sealedUnder = fixture.keyring.activeTerm
        #expect(
            try await fixture.vault.keepAuthorization(
                Self.pending("pay/r", uid: 5, at: fixture.clock.now), state: state, limit: 5))
        let report = try await KeyRotation(vault: fixture.vault, keyring: fixture.keyring, terms: fixture.backend)
            .rotate()
        #expect(report.remainingTerms.contains(sealedUnder) && !report.removedTerms.contains(sealedUnder))
        // Another process, whose keyring loads the terms anew, opens it.
        let other = try fixture.open()
        defer { other.backend.close() }
        let taken = try #require(try await other.vault.takeAuthorization(state: state))
        #expect(taken.codeVerifier.revealString().hasPrefix("verifier-pay/r"))
        let again = try await KeyRotation(vault: fixture.vault, keyring: fixture.keyring, terms: fixture.backend)
            .rotate()
        #expect(again.removedTerms.contains(sealedUnder))

        // An expired sign-in keeps no term: it can never be finished.
        let expiring = fixture.keyring.activeTerm
        #expect(
            try await fixture.vault.keepAuthorization(
                Self.pending("pay/e", uid: 5, at: fixture.clock.now, lifetime: 60),
                state: SecretBytes(utf8: "state-that-expires-0123456789"), limit: 5))
        fixture.clock.advance(seconds: 61)
        let third = try await KeyRotation(vault: fixture.vault, keyring: fixture.keyring, terms: fixture.backend)
            .rotate()
        #expect(third.removedTerms.contains(expiring), "\(third)")
    }

    /// What the database holds of a pending sign-in: neither the state nor the verifier nor the
    /// nonce in any column.
    @Test(arguments: TestBackendKind.allCases)
    func theStoreHoldsNoSecretOfASignIn(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let state = SecretBytes(utf8: "state-never-stored-0123456789")
        #expect(
            try await fixture.vault.keepAuthorization(
                Self.pending("pay/s", uid: 1, at: fixture.clock.now), state: state, limit: 5))
        let dump = try await Self.authorizationRows(fixture.backend)
        for secret in ["state-never-stored", "verifier-pay/s", "nonce-pay/s", "https://app.example/cb"] {
            #expect(!dump.contains(secret), "\(secret) is in the table")
        }
        #expect(dump.contains("pay/s"))
    }

    /// Every column of every pending sign-in, as text (sealed blobs as their bytes).
    static func authorizationRows(_ backend: any VaultBackend) async throws -> String {
        switch backend {
        case let sqlite as SQLiteDatabase:
            return try sqlite.withReader { connection in
                let statement = try connection.statement(
                    "SELECT state_key, credential_id, provider, secret, details FROM authorizations")
                defer { statement.reset() }
                var text = ""
                while try statement.step() {
                    text += (0..<3).map { statement.text(Int32($0)) ?? "" }.joined(separator: " ")
                    for column in Int32(3)...4 {
                        text += " " + String(decoding: statement.blob(column) ?? [], as: UTF8.self)
                    }
                }
                return text
            }
        case let postgres as PostgresDatabase:
            return try await postgres.withReader { reader in
                try await reader.query(
                    """
                    SELECT state_key || ' ' || credential_id || ' ' || provider || ' ' || encode(secret, 'escape')
                        || ' ' || encode(details, 'escape')
                    FROM authorizations
                    """
                ).rows.map { try $0.decode(String.self) }.joined(separator: "\n")
            }
        default:
            Issue.record("unknown backend")
            return ""
        }
    }
}

/// Device grants on both backends: sealed under the device code's fingerprint, claimed by one
/// node at a time, rescheduled only by their holder, left alone by the prune of expired sign-ins.
extension StorageContractTests {
    static func keepDevice(_ vault: Vault, _ n: Int, interval: Int = 5, lifetime: Double = 600) async throws -> Bool {
        try await vault.keepDeviceAuthorization(
            credentialID: try CredentialID("dev/c\(n)"), provider: "idp",
            deviceCode: SecretBytes(utf8: "device-code-\(n)-0123456789"), scopes: ["profile"], labels: nil, uid: 1000,
            gid: nil, keepsSubject: false, issuer: "https://as.example", interval: interval,
            expiresAt: vault.clock.now.adding(seconds: lifetime), limit: 100)
    }

    @Test(arguments: TestBackendKind.allCases)
    func twoNodesClaimingAtOnceNeverTakeTheSameDeviceGrant(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let other = try fixture.open()
        defer { other.backend.close() }
        let otherVault = Vault(store: other.backend, sealer: fixture.keyring, clock: fixture.clock)
        for n in 0..<20 { #expect(try await Self.keepDevice(fixture.vault, n)) }
        #expect(try await fixture.vault.claimDevicePolls(claim: "a", seconds: 60, limit: 20).isEmpty, "due early")
        fixture.clock.advance(seconds: 5)
        // One grant a claim, both nodes at once until none is left: their statements overlap.
        func claimAll(_ vault: Vault, _ claim: String) async throws -> [String] {
            var keys: [String] = []
            while let claimed = try await vault.claimDevicePolls(claim: claim, seconds: 60, limit: 1).first {
                keys.append(try claimed.get().key)
            }
            return keys
        }
        async let first = claimAll(fixture.vault, "a")
        async let second = claimAll(otherVault, "b")
        let (byFirst, bySecond) = try await (first, second)
        let keys = byFirst + bySecond
        #expect(keys.count == 20 && Set(keys).count == 20, "\(keys.count) claims of \(Set(keys).count) grants")
        // Held: nobody claims them again until the claim lapses.
        #expect(try await otherVault.claimDevicePolls(claim: "c", seconds: 60, limit: 20).isEmpty)
        let grant = try #require(try await fixture.vault.devicePolls(for: CredentialID("dev/c0")).first)
        #expect(grant.deviceCode.revealString() == "device-code-0-0123456789" && grant.interval == 5)
        // Only the holder reschedules; that releases it, due at the time it set.
        let holder = byFirst.contains(grant.key) ? "a" : "b"
        #expect(
            try await !fixture.vault.scheduleDevicePoll(key: grant.key, claim: "c", interval: 10, at: fixture.clock.now)
        )
        #expect(
            try await fixture.vault.scheduleDevicePoll(
                key: grant.key, claim: holder, interval: 10, at: fixture.clock.now.adding(seconds: 10)))
        fixture.clock.advance(seconds: 10)
        let again = try await otherVault.claimDevicePolls(claim: "c", seconds: 60, limit: 20).map { try $0.get() }
        #expect(again.map(\.key) == [grant.key] && again.first?.interval == 10)
        // Lapsed claims are taken over (the first nineteen at 65 s, the last at 75 s).
        fixture.clock.advance(seconds: 50)
        #expect(try await fixture.vault.claimDevicePolls(claim: "d", seconds: 60, limit: 20).count == 19)
        fixture.clock.advance(seconds: 10)
        #expect(
            try await fixture.vault.claimDevicePolls(claim: "e", seconds: 60, limit: 20).map { try $0.get().key } == [
                grant.key
            ])
        #expect(try await fixture.vault.removeDevicePoll(key: grant.key, ended: .failed(reason: "access_denied")))
        #expect(try await !fixture.vault.removeDevicePoll(key: grant.key, ended: .authorized))

        // A restarted node takes over what its earlier run held, at once; another node does not.
        #expect(try await fixture.vault.claimDevicePolls(claim: "node-1/run-1", seconds: 60, limit: 20).count == 0)
        fixture.clock.advance(seconds: 60)
        #expect(try await fixture.vault.claimDevicePolls(claim: "node-1/run-1", seconds: 60, limit: 20).count == 19)
        #expect(try await otherVault.claimDevicePolls(claim: "node-2/run-1", seconds: 60, limit: 20).isEmpty)
        #expect(try await otherVault.claimDevicePolls(claim: "node-1/run-2", seconds: 60, limit: 20).count == 19)
    }

    /// The prune of expired sign-ins leaves device grants to their poller (which announces their
    /// end); they count toward their caller's cap; the device code is in no column.
    @Test(arguments: TestBackendKind.allCases)
    func deviceGrantsAreLeftToTheirPollerAndHoldNoCodeInTheClear(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        #expect(try await Self.keepDevice(fixture.vault, 1, lifetime: 30))
        fixture.clock.advance(seconds: 31)
        #expect(
            try await fixture.vault.keepAuthorization(
                Self.pending("pay/after", uid: 1000, at: fixture.clock.now), state: SecretBytes(utf8: "s-after"),
                limit: 5))
        #expect(try await fixture.vault.devicePolls(for: CredentialID("dev/c1")).count == 1)
        let dump = try await Self.authorizationRows(fixture.backend)
        #expect(!dump.contains("device-code-1") && dump.contains("dev/c1"))
        // A device grant is not a state: it cannot be taken as one.
        await #expect(try fixture.vault.takeAuthorization(state: SecretBytes(utf8: "device-code-1-0123456789")) == nil)
    }
}
