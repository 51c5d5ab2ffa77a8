import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultStorage
import TokenVaultTesting

@testable import TokenVaultEngine

/// A provider has answered with new tokens and the database refuses the commit: the answer is
/// held and committed once the database takes it. The provider sees each refresh token once,
/// nothing ends `needs_reauth`, and meanwhile the old token is served and the hold is visible.
@Suite struct HeldCommitTests {
    /// Retries every 10-50 ms, so the tests do not wait for the production backoff.
    static let quickRetries = Vault.Options(commitRetryBase: 0.01, commitRetryCap: 0.05)

    /// An engine over a store whose row commits fail on demand, its held commits retried after
    /// `retry` seconds, and one credential in it.
    static func refusingStore(
        retry: Double, credential name: String
    ) async throws -> (EngineFixture, FailingStore, CredentialID) {
        let testVault = try TestVault()
        let failing = FailingStore(testVault.database)
        let fixture = try EngineFixture(
            vaultOptions: Vault.Options(commitRetryBase: retry, commitRetryCap: retry), testVault: testVault,
            store: { _ in failing })
        let (id, _) = try await fixture.store(name)
        return (fixture, failing, id)
    }

    @Test func aCommitRefusedByTheStoreIsHeldThenCommitted() async throws {
        let testVault = try TestVault()
        let failing = FailingStore(testVault.database)
        let fixture = try EngineFixture(vaultOptions: Self.quickRetries, testVault: testVault, store: { _ in failing })
        let (id, _) = try await fixture.store("held")
        let before = try await fixture.secrets(id).accessToken.revealString()
        failing.failNextRowCommits(5)

        let outcome = try await fixture.engine.refresh(id, reason: .forced)
        guard case .commitPending(let held) = outcome else {
            Issue.record("expected the commit to be held, got \(outcome)")
            return
        }
        #expect(held.failures >= 1 && held.lastError.contains("injected commit failure"))
        // While it is held: the previous token is still what is stored and served, and a second
        // refresh does not present the (now spent) refresh token again.
        if let shown = try await fixture.metadata(id).pendingCommit {
            #expect(shown.failures >= 1)
            await #expect(try fixture.secrets(id).accessToken.revealString() == before)
            _ = try await fixture.engine.refresh(id, reason: .forced)
        }

        #expect(try await waitUntil(within: 5) { fixture.vault.pendingCommit(for: id) == nil })
        let after = try await fixture.metadata(id)
        #expect(after.generation == 2)
        #expect(after.status == .active)
        #expect(after.pendingCommit == nil)
        await #expect(try fixture.secrets(id).accessToken.revealString() != before)
        #expect(failing.failures == 5)
        #expect(fixture.provider.calls == 1)
        #expect(fixture.provider.presentedTwice.isEmpty)
        #expect(fixture.vault.commitCounters.failures == 5)
        #expect(fixture.vault.commitCounters.recovered == 1)
        #expect(fixture.logs.text.contains("new tokens could not be committed"))
        #expect(fixture.logs.text.contains("held tokens committed"))
        #expect(!fixture.logs.text.contains("rt-"), "no token in the log")
    }

    /// A held answer shows as `pending_commit` in the listing without any row written: no page
    /// of it is kept while anything is held, and one kept before is not served
    /// (`Vault.listingMark`).
    @Test func noPageOfTheListingIsKeptWhileAnAnswerIsHeld() async throws {
        let (fixture, failing, id) = try await Self.refusingStore(retry: 1, credential: "listed")
        let before = try #require(fixture.vault.listingMark())
        failing.failNextRowCommits(2)
        let outcome = try await fixture.engine.refresh(id, reason: .forced)
        guard case .commitPending = outcome else {
            Issue.record("expected the commit to be held, got \(outcome)")
            return
        }
        // Retried a second later: held until then.
        try #require(fixture.vault.pendingCommit(for: id) != nil)
        #expect(fixture.vault.listingMark() == nil)
        #expect(!fixture.vault.isCurrent(before))
        #expect(try await waitUntil(within: 5) { fixture.vault.pendingCommit(for: id) == nil })
        let after = try #require(fixture.vault.listingMark())
        #expect(after != before && fixture.vault.isCurrent(after))
    }

    /// Heartbeats failed (the database unreachable) while an answer was held; the first beat that
    /// goes through again commits what the node holds before any provider call may go out, not
    /// when the held commit's backoff (30 s here) would have come round.
    @Test func aRenewalAfterFailedBeatsCommitsWhatIsHeldBeforeAnyNewCall() async throws {
        let (fixture, failing, id) = try await Self.refusingStore(retry: 30, credential: "renewed")
        failing.failNextRowCommits(1)
        guard case .commitPending = try await fixture.engine.refresh(id, reason: .forced) else {
            Issue.record("expected the commit to be held")
            return
        }
        let leases = fixture.engine.leases
        failing.failHeartbeats(true)
        #expect(await !leases.beat())
        failing.failHeartbeats(false)
        let started = ContinuousClock.now
        #expect(await leases.beat())
        // A provider call asks for its permit: it waits for the held commit.
        _ = await leases.permit(journalled: leases.lapses)
        #expect(fixture.vault.pendingCommit(for: id) == nil, "the answer is still held")
        #expect(ContinuousClock.now - started < .seconds(5))
        await #expect(try fixture.metadata(id).generation == 2)
    }

    /// The real thing: a second SQLite connection holds `BEGIN IMMEDIATE` past the busy timeout
    /// while the provider answers, so the refresh's commit gets `SQLITE_BUSY`.
    @Test func aCommitBlockedByAnotherConnectionsLockIsHeldThenCommitted() async throws {
        let testVault = try TestVault(busyTimeoutMilliseconds: 100)
        let fixture = try EngineFixture(vaultOptions: Self.quickRetries, testVault: testVault)
        let (id, _) = try await fixture.store("locked")
        // The provider answers only once the other connection holds the lock: the commit meets
        // it whatever the machine's load (a fixed 0.4 s answer once came before the lock).
        let locked = Latch()
        fixture.provider.script(.hold(locked), .succeed())
        let other = try SQLiteDatabase(
            path: testVault.databasePath, checksum: SHA256.hex, busyTimeoutMilliseconds: 5000)
        defer { other.close() }
        let refresh = Task { try await fixture.engine.refresh(id, reason: .forced) }
        // Once the attempt is journalled (the provider is being called), take the write lock
        // and keep it until the refresh's commit has met it and is held (a fixed second once
        // ended before the commit came, on a machine busy with the other suites), at most 15 s.
        #expect(try await waitUntil(within: 5) { try await !fixture.vault.openAttempts(limit: 1).isEmpty })
        // Held on a thread of the store's own: a wait on the concurrency pool stalls other tests.
        let vault = fixture.vault
        let lockHeld = Task {
            try await other.write(durability: .normal) { _ in
                locked.open()
                let deadline = ContinuousClock.now + .seconds(15)
                while vault.pendingCommit(for: id) == nil, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
            }
        }
        let outcome = try await refresh.value
        guard case .commitPending(let held) = outcome else {
            Issue.record("expected the commit to be held behind the lock, got \(outcome)")
            return
        }
        #expect(held.lastError.contains("locked") || held.lastError.contains("busy"), "\(held.lastError)")
        try await lockHeld.value
        #expect(try await waitUntil(within: 5) { fixture.vault.pendingCommit(for: id) == nil })
        let after = try await fixture.metadata(id)
        #expect(after.generation == 2 && after.status == .active)
        #expect(fixture.provider.calls == 1)
        #expect(fixture.provider.presentedTwice.isEmpty)
        await #expect(try fixture.vault.openAttempts(limit: 10).isEmpty, "the attempt closed with the commit")
    }

    /// A put that replaces the credential while its refresh answer is held wins: the held
    /// commit finds another generation and is dropped as superseded, not written over it.
    @Test func aPutWhileAnAnswerIsHeldWins() async throws {
        let (fixture, failing, id) = try await Self.refusingStore(retry: 0.3, credential: "replaced")
        failing.failNextRowCommits(1)
        let outcome = try await fixture.engine.refresh(id, reason: .forced)
        guard case .commitPending = outcome else {
            Issue.record("expected the commit to be held, got \(outcome)")
            return
        }
        let replacement = try await fixture.store("replaced", refreshToken: "rt-from-a-new-sign-in").1
        #expect(replacement.generation == 2)
        #expect(try await waitUntil(within: 5) { fixture.vault.pendingCommit(for: id) == nil })
        await #expect(try fixture.metadata(id).generation == 2)
        await #expect(try fixture.secrets(id).refreshToken?.revealString() == "rt-from-a-new-sign-in")
    }
}
