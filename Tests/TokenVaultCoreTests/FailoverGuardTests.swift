import Synchronization
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

/// What a node decides when the database's timeline changes, and how kept commits are written
/// back (the whole failover, with a promoted standby: `FailoverTests`).
@Suite struct FailoverGuardTests {
    static let now = Timestamp(milliseconds: 1_795_000_000_000)

    static func reading(timeline: Int64?, _ nodes: [(String, Int64?, ageSeconds: Double)]) -> HeartbeatReading {
        HeartbeatReading(
            databaseNow: now,
            nodes: nodes.map {
                NodeRecord(
                    node: $0.0, incarnation: "i", beat: 1, beatAt: now.adding(seconds: -$0.ageSeconds), startedAt: now,
                    host: "h", pid: 1, reconciledTimeline: $0.1)
            }, timeline: timeline)
    }

    @Test func aNewTimelineHoldsRefreshesUntilEveryLiveNodeReconciled() {
        let failover = FailoverGuard()
        // A vault used alone (tools, tests) is never held.
        #expect(failover.refusal(seeing: 1) == nil)
        failover.arm()
        #expect(failover.refusal(seeing: 1) != nil)
        // First beat: this node has reconciled nothing yet.
        #expect(failover.observe(Self.reading(timeline: 1, [("a", nil, 0)]), node: "a", period: 30))
        #expect(failover.refusal() != nil)
        failover.reconciled(1)
        #expect(!failover.observe(Self.reading(timeline: 1, [("a", 1, 0), ("b", 1, 2)]), node: "a", period: 30))
        #expect(failover.refusal() == nil)
        // A transaction that sees another timeline than the last beat's is refused at once.
        #expect(failover.refusal(seeing: 2) != nil)
        // The promoted standby: this node must reconcile, and waits for b too.
        #expect(failover.observe(Self.reading(timeline: 2, [("a", 1, 0), ("b", 1, 2)]), node: "a", period: 30))
        failover.reconciled(2)
        #expect(failover.refusal()?.message.contains("waiting for b") == true)
        #expect(failover.waitingFor == ["b"])
        // d never reported a timeline (it keeps nothing) and is not waited for.
        #expect(
            !failover.observe(
                Self.reading(timeline: 2, [("a", 2, 0), ("b", 1, 1), ("d", nil, 0)]), node: "a", period: 30))
        #expect(failover.waitingFor == ["b"])
        // b reconciled; c has not beaten for longer than a lease period and holds nobody.
        #expect(
            !failover.observe(
                Self.reading(timeline: 2, [("a", 2, 0), ("b", 2, 1), ("c", 1, 31)]), node: "a", period: 30))
        #expect(failover.refusal() == nil)
        #expect(failover.refusal(seeing: 2) == nil)
    }

    @Test func aDatabaseWithoutTimelinesNeverHolds() {
        let failover = FailoverGuard()
        failover.arm()
        #expect(!failover.observe(Self.reading(timeline: nil, [("a", nil, 0), ("b", 7, 0)]), node: "a", period: 30))
        #expect(failover.refusal() == nil && failover.refusal(seeing: nil) == nil)
    }

    /// Kept rows go back only over the same credential at a lower generation; each is audited.
    @Test func reapplyWritesBackOnlyWhatTheDatabaseIsBehind() async throws {
        let store = InMemoryStore()
        let clock = FakeClock()
        let keyring = try Keyring.bootstrap(masterKey: SodiumRandom.secret(count: 32), store: store, clock: clock)
        let vault = Vault(store: store, sealer: keyring, clock: clock)
        let kept = KeptRows()
        vault.retainAnswers(in: kept)
        let id = try CredentialID("idp/alice")
        let first = SamplePayloads.oauth("first")
        let second = SamplePayloads.oauth("second")
        try await vault.put(id, payload: try SamplePayloads.decode(first.json), provider: "p")
        try await vault.put(id, payload: try SamplePayloads.decode(second.json), provider: "p")
        let rows = kept.rows
        #expect(rows.map(\.metadata.generation) == [1, 2])
        // The database lost generation 2: it holds generation 1 again.
        let lost = rows[0]
        try await store.write(durability: .full) { writer in try await writer.save(lost) }
        #expect(try await vault.credential(id).secrets.accessToken.revealString() == first.tokens[0])

        let report = try await vault.reapply([rows[1]], timeline: 2)
        #expect(report.reapplied == [id] && report.missing.isEmpty && report.current == 0)
        let read = try await vault.credential(id)
        #expect(read.metadata.generation == 2)
        #expect(read.secrets.accessToken.revealString() == second.tokens[0])
        let audits = store.auditEvents.filter { $0.operation == AuditOperation.credentialReapply.name }
        #expect(audits.count == 1 && audits.first?.credentialID == id)
        #expect(audits.first?.detail?.contains(second.tokens[0]) == false)

        // An older kept row changes nothing; a credential gone is reported, not created again.
        #expect(try await vault.reapply([rows[0]], timeline: 2).current == 1)
        try await vault.delete(id)
        #expect(try await vault.reapply([rows[1]], timeline: 2).missing == [id])
        await #expect(throws: VaultError.self) { try await vault.metadata(id) }
    }
}

extension FailoverGuardTests {
    /// After a failover a node journals again what it has out, and what it left open for a
    /// resumption when its courier ended, for as long as commits are kept; the rest it forgets.
    @Test func rejournalRestoresTheAttemptsTheDatabaseLost() async throws {
        let store = InMemoryStore()
        let clock = FakeClock()
        let keyring = try Keyring.bootstrap(masterKey: SodiumRandom.secret(count: 32), store: store, clock: clock)
        let vault = Vault(store: store, sealer: keyring, clock: clock)
        vault.retainAnswers(in: KeptRows())
        vault.failover.arm()
        var started: [RefreshAttempt] = []
        for name in ["idp/out", "idp/awaiting", "idp/ended"] {
            let id = try CredentialID(name)
            let put = try await vault.put(
                id, payload: try SamplePayloads.decode(SamplePayloads.oauth(name).json), provider: "p")
            let request = Vault.AttemptRequest(
                metadata: put, fingerprint: "f-\(name)", owner: "node-a/1",
                leaseUntil: clock.now.adding(seconds: 30), isOwnerGone: { _, _ in false })
            started.append(try #require(try await vault.beginAttempt(request)).0)
        }
        let attempts = started
        let (out, awaiting) = (attempts[0], attempts[1])
        // The courier ended during the second call; the third call ended and its attempt stays
        // open without a resumption to come (nothing is remembered for it).
        vault.awaitResumption(of: awaiting)
        func loseEveryJournalRow() async throws {
            try await store.write(durability: .full) { writer in
                for attempt in attempts {
                    _ = try await writer.closeSucceededAttempt(attemptID: attempt.attemptID, owner: attempt.leaseOwner)
                }
            }
        }
        func open() async throws -> Set<String> {
            var open: Set<String> = []
            for attempt in attempts {
                let row = try await store.write(durability: .full) {
                    try await $0.openAttempt(for: attempt.credentialID)
                }
                if let row {
                    open.insert(row.attemptID)
                }
            }
            return open
        }
        vault.forgetSettledAttempts(inFlight: [out.credentialID])
        try await loseEveryJournalRow()
        #expect(try await vault.rejournal(inFlight: [out.credentialID]) == 2)
        #expect(try await open() == [out.attemptID, awaiting.attemptID])

        // Past the retention, the attempt awaiting its resumption is forgotten too.
        clock.advance(seconds: 901)
        vault.forgetSettledAttempts(inFlight: [out.credentialID])
        try await loseEveryJournalRow()
        #expect(try await vault.rejournal(inFlight: [out.credentialID]) == 1)
        #expect(try await open() == [out.attemptID])
    }
}

/// An `AnswerRetention` that keeps rows in memory.
final class KeptRows: AnswerRetention {
    private let kept = Mutex<[SealedCredentialRecord]>([])
    var rows: [SealedCredentialRecord] { kept.withLock { $0 } }
    func retain(_ record: SealedCredentialRecord) { kept.withLock { $0.append(record) } }
    func retained() throws -> [SealedCredentialRecord] { rows }
    var retention: Double { 900 }
    var reconciledTimeline: Int64? { nil }
    func markReconciled(_ timeline: Int64) throws {}
    func prune() {}
}
