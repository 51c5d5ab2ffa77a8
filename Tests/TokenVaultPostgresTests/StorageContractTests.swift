import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

/// The storage contract, the same tests on both backends: SQLite in a file, and PostgreSQL
/// (a real server started by `TestPostgres`). Everything goes through the ledger (`Vault`) or the
/// protocols the daemon uses, never through backend-specific calls.
@Suite struct StorageContractTests {
    static func payload(_ marker: String, lifetime: Double = 3600) -> TokenPayload {
        TokenPayload(
            kind: .oauth2,
            secrets: CredentialSecrets(
                accessToken: SecretBytes(utf8: "at-\(marker)"), refreshToken: SecretBytes(utf8: "rt-\(marker)")),
            tokenType: "Bearer", expiry: .after(seconds: lifetime))
    }

    @Test(arguments: TestBackendKind.allCases)
    func credentialsAreStoredReadListedAndDeleted(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let vault = fixture.vault
        for id in ["pay/a", "pay/b", "ops/c"] {
            try await vault.put(try CredentialID(id), payload: Self.payload(id), provider: "idp", labels: ["k": id])
        }
        let a = try await vault.credential(try CredentialID("pay/a"))
        #expect(a.secrets.accessToken.revealString() == "at-pay/a")
        #expect(a.secrets.refreshToken?.revealString() == "rt-pay/a")
        #expect(a.metadata.labels == ["k": "pay/a"] && a.metadata.generation == 1 && a.metadata.hasRefreshToken)

        let everything = try await vault.list(CredentialQuery())
        #expect(everything.map(\.id.description) == ["ops/c", "pay/a", "pay/b"])
        await #expect(try vault.list(CredentialQuery(namespace: "pay")).map(\.id.description) == ["pay/a", "pay/b"])
        await #expect(try vault.list(CredentialQuery(namespaces: ["ops"])).map(\.id.description) == ["ops/c"])
        await #expect(
            try vault.list(CredentialQuery(after: try CredentialID("pay/a"), limit: 5)).map(\.id.description)
                == ["pay/b"])
        await #expect(try vault.list(CredentialQuery(status: .failing)).isEmpty)
        await #expect(try fixture.backend.credentialCountsByStatus() == [.active: 3])

        // A second put replaces the tokens and raises the generation.
        try await vault.put(try CredentialID("pay/a"), payload: Self.payload("second"), provider: "idp")
        let replaced = try await vault.credential(try CredentialID("pay/a"))
        #expect(replaced.metadata.generation == 2 && replaced.secrets.accessToken.revealString() == "at-second")

        try await vault.delete(try CredentialID("pay/b"))
        await #expect(throws: VaultError.self) { try await vault.metadata(try CredentialID("pay/b")) }
        await #expect(try vault.list(CredentialQuery()).count == 2)
    }

    /// A credential's grant is stored in its plain column and read back by every read: by id,
    /// listed, and by a second opening of the database; tokens put over it remove it.
    @Test(arguments: TestBackendKind.allCases)
    func aGrantIsStoredAndReadBack(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let id = try CredentialID("machines/reports")
        let grant = CredentialGrant(
            scopes: ["reports.read"], audiences: ["https://api.example"], resources: ["https://api.example/r\"q"])
        var payload = Self.payload("machine")
        payload.secrets.refreshToken = nil
        try await fixture.vault.put(id, payload: payload, provider: "idp", grant: grant)
        #expect(try await fixture.vault.metadata(id).grant == grant)
        #expect(try await fixture.vault.list(CredentialQuery()).first?.grant == grant)
        let other = try fixture.open(cacheBytes: kind == .sqlite ? 0 : nil)
        defer { other.backend.close() }
        #expect(try await other.vault.credential(id).metadata.grant == grant)
        try await fixture.vault.put(id, payload: Self.payload("person"), provider: "idp")
        #expect(try await fixture.vault.metadata(id).grant == nil)
    }

    /// Another process on the same database (a second node) reads what the first wrote as soon
    /// as the write returned, and sees its deletes. (On SQLite the second process keeps no cache
    /// of rows: a daemon's lock keeps any other writer out while it serves, and its cache holds
    /// the rows it wrote itself.)
    @Test(arguments: TestBackendKind.allCases)
    func aSecondOpeningSeesEveryWriteOnceItReturned(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let other = try fixture.open(cacheBytes: kind == .sqlite ? 0 : nil)
        defer { other.backend.close() }
        let id = try CredentialID("pay/shared")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        await #expect(try other.vault.credential(id).secrets.accessToken.revealString() == "at-one")
        try await fixture.vault.put(id, payload: Self.payload("two"), provider: "idp")
        await #expect(try other.vault.credential(id).secrets.accessToken.revealString() == "at-two")
        try await fixture.vault.delete(id)
        await #expect(throws: VaultError.self) { try await other.vault.metadata(id) }
    }

    /// Two processes journal refreshes of the same credentials at once, both alive: each
    /// credential gets exactly one open attempt, and the other process is told the lease is held.
    @Test(arguments: TestBackendKind.allCases)
    func oneOpenAttemptPerCredentialAcrossOpenings(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let other = try fixture.open()
        defer { other.backend.close() }
        let ids = try (0..<40).map { try CredentialID("pay/c\($0)") }
        for id in ids { try await fixture.vault.put(id, payload: Self.payload(id.name), provider: "idp") }
        let leaseUntil = fixture.clock.now.adding(seconds: 60)
        let winners = try await withThrowingTaskGroup(of: (String, Bool).self) { group in
            for id in ids {
                for (owner, vault) in [("node-a", fixture.vault), ("node-b", other.vault)] {
                    group.addTask {
                        let metadata = try await vault.metadata(id)
                        let started = try await vault.beginAttempt(
                            Vault.AttemptRequest(
                                metadata: metadata, fingerprint: "fp-\(id.name)", owner: owner, leaseUntil: leaseUntil,
                                isOwnerGone: { _, _ in false }))
                        return (id.description, started != nil)
                    }
                }
            }
            var winners: [String: Int] = [:]
            for try await (id, won) in group where won { winners[id, default: 0] += 1 }
            return winners
        }
        #expect(winners.count == ids.count && winners.values.allSatisfy { $0 == 1 }, "\(winners)")
        await #expect(try fixture.vault.openAttempts(limit: 100).count == ids.count)
    }

    /// The schedule is fenced by generation: an update computed from an older row changes nothing.
    @Test(arguments: TestBackendKind.allCases)
    func aScheduleUpdateOfAnOlderGenerationChangesNothing(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let id = try CredentialID("pay/fenced")
        let first = try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        try await fixture.vault.put(id, payload: Self.payload("two"), provider: "idp")
        let stale = ScheduleUpdate(
            id: id, generation: first.generation, status: .failing, refreshAt: nil,
            lastError: CredentialFailure(code: "stale", message: "from an old row", at: fixture.clock.now),
            refreshFailures: 1, updatedAt: fixture.clock.now)
        #expect(try await fixture.vault.updateSchedule(stale) == nil)
        let current = try await fixture.vault.metadata(id)
        #expect(current.status == .active && current.lastError == nil && current.generation == 2)
        let due = try await fixture.vault.dueCredentials(at: fixture.clock.now.adding(seconds: 86_400), limit: 10)
        #expect(due.map(\.id) == [id])
        await #expect(try fixture.vault.earliestRefreshAt() == current.refreshAt)
    }

    /// The scan skips this process's refreshes in flight without counting them against its
    /// limit: under a slow provider they are most of the due list, and every scan read them all.
    @Test(arguments: TestBackendKind.allCases)
    func aDueScanSkipsWhatIsInFlightAndFillsItsLimitPastIt(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let ids = try (0..<5).map { try CredentialID("pay/due\($0)") }
        for id in ids { try await fixture.vault.put(id, payload: Self.payload(id.name), provider: "idp") }
        let later = fixture.clock.now.adding(seconds: 86_400)
        let all = try await fixture.vault.dueCredentials(at: later, limit: 10, skipping: []).map(\.id)
        #expect(Set(all) == Set(ids))
        let inFlight = Set(all.prefix(3))
        let due = try await fixture.vault.dueCredentials(at: later, limit: 2, skipping: inFlight).map(\.id)
        #expect(due == Array(all.suffix(2)), "the two due after the three in flight, in order")
        await #expect(try fixture.vault.dueCredentials(at: later, limit: 1, skipping: inFlight).map(\.id) == [all[3]])
    }

    /// Key rotation: a new term, every row resealed onto it, the old term removed; the vault
    /// opens again with the same master key and every token still opens.
    @Test(arguments: TestBackendKind.allCases)
    func keyRotationResealsEveryRowAndTheVaultReopens(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let ids = try (0..<25).map { try CredentialID("pay/k\($0)") }
        for id in ids { try await fixture.vault.put(id, payload: Self.payload(id.name), provider: "idp") }
        let before = fixture.keyring.activeTerm
        let report = try await KeyRotation(
            vault: fixture.vault, keyring: fixture.keyring, terms: fixture.backend, batchSize: 7
        ).rotate()
        #expect(report.newTerm != before && report.resealed == ids.count && report.remainingTerms.isEmpty)
        #expect(try fixture.backend.termUsage() == [report.newTerm: ids.count])
        let reopened = try fixture.open()
        defer { reopened.backend.close() }
        for id in ids {
            await #expect(try reopened.vault.credential(id).secrets.accessToken.revealString() == "at-\(id.name)")
        }
        await #expect(try reopened.vault.verify().isClean)
    }

    /// A key rotation made by another opening (another node): rows sealed under the term this
    /// opening has not loaded are refused by the read that must not wait (it would read the
    /// store on an event loop, which crashed PostgreSQL nodes) and served by the ordinary read,
    /// which loads the term off the concurrency pool (reads meeting it at once share the load);
    /// after that the waiting-free read serves them too.
    @Test func aTermAddedElsewhereIsLoadedByTheReadThatMayWait() async throws {
        let fixture = try await TestBackendVault.make(.sqlite)
        // No cache of rows: the rotation's writes must reach this opening's reads.
        let other = try fixture.open(cacheBytes: 0)
        defer { other.backend.close() }
        let id = try CredentialID("pay/rotated")
        try await fixture.vault.put(id, payload: Self.payload("old"), provider: "idp")
        #expect(try other.vault.credentialWithoutWaiting(id, opening: [.accessToken]).secrets.accessToken.count > 0)
        _ = try await KeyRotation(vault: fixture.vault, keyring: fixture.keyring, terms: fixture.backend).rotate()
        #expect {
            try other.vault.credentialWithoutWaiting(id, opening: [.accessToken])
        } throws: {
            ($0 as? VaultError)?.code == .storageUnavailable
        }
        let vault = other.vault
        let reads = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<8 {
                group.addTask { try await vault.credential(id).secrets.accessToken.revealString() }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(reads == Array(repeating: "at-old", count: 8))
        #expect(try other.vault.credentialWithoutWaiting(id, opening: [.accessToken]).secrets.accessToken.count > 0)
    }

    /// The audit chain: rows appended from two openings form one chain that verifies; pruning
    /// moves the anchor and the rest still verifies; an edited row is named.
    @Test(arguments: TestBackendKind.allCases)
    func theAuditChainSpansOpeningsAndSurvivesPruning(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let other = try fixture.open()
        defer { other.backend.close() }
        func events(_ count: Int, _ label: String) -> [AuditEvent] {
            (0..<count).map {
                AuditEvent(
                    at: fixture.clock.now, operation: .credentialPut, outcome: .succeeded, detail: "\(label)\($0)")
            }
        }
        try await fixture.vault.appendAudits(events(30, "a"))
        try await other.vault.appendAudits(events(30, "b"))
        try await fixture.vault.appendAudits(events(30, "c"))
        var verification = try await other.vault.verifyAudit()
        #expect(verification.isClean && verification.rows == 90, "\(verification)")
        #expect(
            try await fixture.vault.pruneAudit(before: Timestamp(milliseconds: 0), keepingAtMost: 50, batch: 15) == 40)
        verification = try await fixture.vault.verifyAudit()
        #expect(verification.isClean && verification.rows == 50, "\(verification)")
        let rows = try await fixture.vault.auditEvents(AuditQuery(.oldestFirst, limit: 100))
        #expect(rows.count == 50 && rows.first?.event.detail == "b10")
    }

    /// An operator's page of the audit trail is newest first; its cursor walks back through every
    /// row once, and a credential's filter keeps only its own rows, on either backend.
    @Test(arguments: TestBackendKind.allCases)
    func theAuditTrailPagesNewestFirstByCursor(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let (a, b) = (try CredentialID("pay/a"), try CredentialID("pay/b"))
        try await fixture.vault.appendAudits(
            (0..<25).map {
                AuditEvent(
                    at: fixture.clock.now, operation: .tokenRead, credentialID: [a, b, nil][$0 % 3],
                    outcome: .allowed, detail: "\($0)")
            })
        let oldestFirst = try await fixture.vault.auditEvents(AuditQuery(.oldestFirst, limit: 100)).map(\.id)
        #expect(oldestFirst.count == 25 && oldestFirst == oldestFirst.sorted())
        func walk(_ credential: CredentialID?) async throws -> [StoredAuditEvent] {
            var rows: [StoredAuditEvent] = []
            var cursor: Int64?
            repeat {
                let page = try await fixture.vault.auditEvents(
                    AuditQuery(.newestFirst, cursor: cursor, credentialID: credential, limit: 4))
                rows += page
                cursor = page.count == 4 ? page.last?.id : nil
            } while cursor != nil
            return rows
        }
        await #expect(try walk(nil).map(\.id) == oldestFirst.reversed())
        let ofA = try await walk(a)
        #expect(ofA.count == 9 && ofA.allSatisfy { $0.event.credentialID == a }, "\(ofA.map(\.event.detail))")
        #expect(ofA.map(\.event.detail) == stride(from: 24, through: 0, by: -3).map { "\($0)" })
        await #expect(
            try fixture.vault.auditEvents(AuditQuery(.newestFirst, cursor: oldestFirst.first, limit: 4)).isEmpty,
            "nothing is older than the first row")
        await #expect(try fixture.vault.auditEvents(AuditQuery(.newestFirst, cursor: 0, limit: 100)).isEmpty)
        await #expect(
            try fixture.vault.auditEvents(AuditQuery(.newestFirst, cursor: .max, limit: 100)).map(\.id)
                == oldestFirst.reversed())
        // Oldest first, filtered, from a cursor: the walk the other way.
        let laterOfB = try await fixture.vault.auditEvents(
            AuditQuery(.oldestFirst, cursor: oldestFirst[10], credentialID: b, limit: 3))
        #expect(laterOfB.map(\.event.detail) == ["13", "16", "19"], "\(laterOfB.map(\.event.detail))")
    }

    struct Refused: Error {}

    /// A write that throws leaves nothing behind and the others of its transaction stand, as the
    /// group commit needs (PostgreSQL rolls back a transaction whose only write failed instead of
    /// wrapping it in a savepoint; a second write gets a real one). The connection stays usable.
    @Test(arguments: TestBackendKind.allCases)
    func aWriteThatThrowsIsUndoneAlone(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let (a, b, c) = (try CredentialID("pay/a"), try CredentialID("pay/b"), try CredentialID("pay/c"))
        for id in [a, b, c] { try await fixture.vault.put(id, payload: Self.payload("\(id)"), provider: "idp") }
        let alone = try await fixture.backend.write(durability: .full) { writer in
            await caught {
                try await writer.savepoint {
                    _ = try await writer.delete(a); throw Refused()
                }
            }
        }
        #expect(throws: Refused.self) { try alone.get() }
        let pair = try await fixture.backend.write(durability: .full) { writer in
            (
                await caught { try await writer.savepoint { try await writer.delete(b) } },
                await caught {
                    try await writer.savepoint {
                        _ = try await writer.delete(c); throw Refused()
                    }
                }
            )
        }
        #expect(try pair.0.get() == true)
        #expect(throws: Refused.self) { try pair.1.get() }
        await #expect(try fixture.backend.record(a) != nil)
        await #expect(try fixture.backend.record(b) == nil)
        await #expect(try fixture.backend.record(c) != nil)
        try await fixture.vault.delete(a)
        await #expect(try fixture.backend.record(a) == nil)
    }

    /// A row written whole (a put, a refresh's new tokens) is kept in the cache as written once
    /// its transaction has committed, so the next read of it needs no database, and it is the
    /// row the database has. A transaction that threw, or a write of one that threw after its
    /// save (its savepoint rolled back), leaves nothing of its saves cached.
    @Test(arguments: TestBackendKind.allCases)
    func aRowWrittenWholeIsReadFromMemoryOnceCommittedAndOnlyThen(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let backend = fixture.backend
        // A PostgreSQL node trusts its cache while it hears every change, as a daemon does.
        let listener = (backend as? PostgresDatabase).map { database in Task { await database.listenForChanges() } }
        defer { listener?.cancel() }
        if let database = backend as? PostgresDatabase {
            #expect(try await waitUntil(within: 30) { database.listenerStatus.connected })
        }
        let (a, b) = (try CredentialID("pay/a"), try CredentialID("pay/b"))
        for id in [a, b] { try await fixture.vault.put(id, payload: Self.payload("\(id)"), provider: "idp") }
        // Read once: SQLite's cache keeps a row written whole only if a read wanted it before
        // (a put alone is not a want), so the next put of `a` is one it keeps.
        for id in [a, b] { _ = try await backend.record(id) }
        try await fixture.vault.put(a, payload: Self.payload("\(a) again"), provider: "idp")
        let before = backend.rowCacheStatistics
        let written = try await #require(try backend.record(a))
        #expect(backend.rowCacheStatistics.misses == before.misses, "the put's row was kept as written")
        #expect(backend.rowCacheStatistics.hits == before.hits + 1)
        await #expect(try backend.records(after: nil, limit: 10).first == written, "and it is the database's row")

        @Sendable func bumped(_ row: SealedCredentialRecord) -> SealedCredentialRecord {
            var row = row
            row.metadata.generation += 1
            return row
        }
        await #expect(throws: Refused.self) {
            try await backend.write(durability: .full) { writer in
                try await writer.save(bumped(written))
                throw Refused()
            }
        }
        await #expect(try backend.record(a) == written, "a transaction that threw keeps nothing")

        let other = try await #require(try backend.record(b))
        let results = try await backend.write(durability: .full) { writer in
            (
                await caught { try await writer.savepoint { try await writer.save(bumped(written)) } },
                await caught {
                    try await writer.savepoint {
                        try await writer.save(bumped(other))
                        throw Refused()
                    }
                }
            )
        }
        #expect(throws: Never.self) { try results.0.get() }
        #expect(throws: Refused.self) { try results.1.get() }
        await #expect(try backend.record(b) == other, "a save rolled back with its write is not kept")
        await #expect(try backend.record(a)?.metadata.generation == written.metadata.generation + 1)
        await #expect(try backend.records(after: nil, limit: 10).map(\.metadata.generation) == [3, 1])
    }

    /// A refresh planned from a row read earlier (a node's cache may be behind another node's
    /// change) is not started when the row under the lock is another one at the same generation:
    /// the credential deleted and stored again (its generation starts at 1 again, with other
    /// tokens), or marked for deletion meanwhile. Journalling it would present a refresh token of
    /// the deleted grant and then write its answer over the new one, or undo the mark.
    @Test(arguments: TestBackendKind.allCases)
    func aRefreshPlannedFromAnEarlierRowAtTheSameGenerationIsNotStarted(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let vault = fixture.vault
        let id = try CredentialID("pay/again")
        func request(_ metadata: CredentialMetadata) -> Vault.AttemptRequest {
            Vault.AttemptRequest(
                metadata: metadata, fingerprint: "fp", owner: "node-a",
                leaseUntil: fixture.clock.now.adding(seconds: 60),
                isOwnerGone: { _, _ in false })
        }
        try await vault.put(id, payload: Self.payload("one"), provider: "idp")
        let planned = try await vault.metadata(id)
        fixture.clock.advance(seconds: 1)
        try await vault.delete(id)
        try await vault.put(id, payload: Self.payload("two"), provider: "idp")
        await #expect(try vault.metadata(id).generation == planned.generation)
        #expect(try await vault.beginAttempt(request(planned)) == nil, "stored again since")

        let replanned = try await vault.metadata(id)
        var marked = ScheduleUpdate(replanned)
        marked.status = .revokePending
        #expect(try await vault.updateSchedule(marked) != nil)
        #expect(try await vault.beginAttempt(request(replanned)) == nil, "marked for deletion since")
        await #expect(try vault.metadata(id).status == .revokePending)
        await #expect(try vault.openAttempts(limit: 10).isEmpty)
        #expect(try await vault.beginAttempt(request(try vault.metadata(id))) != nil)
    }

    /// A schedule change planned from an earlier read (a postponement, a failure's backoff) does
    /// not undo a status set since at the same generation: a credential marked for removal, or
    /// for a new sign-in, stays so. Twenty at once, so that PostgreSQL's group commit (which
    /// decides in memory which of its updates apply) takes them together as well as alone.
    @Test(arguments: TestBackendKind.allCases)
    func aScheduleChangePlannedFromAnEarlierReadDoesNotUndoAStatusSetSince(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let vault = fixture.vault
        let ids = try (0..<20).map { try CredentialID("pay/marked\($0)") }
        for id in ids { try await vault.put(id, payload: Self.payload("\(id)"), provider: "idp") }
        let planned = try await ids.asyncMap { try await vault.metadata($0) }
        for metadata in planned {
            var marked = ScheduleUpdate(metadata)
            marked.status = .revokePending
            #expect(try await vault.updateSchedule(marked) != nil)
        }
        let applied = try await withThrowingTaskGroup(of: Bool.self) { group in
            for metadata in planned {
                group.addTask {
                    var postponed = ScheduleUpdate(metadata)
                    postponed.refreshAt = metadata.refreshAt?.adding(seconds: 600)
                    return try await vault.updateSchedule(postponed) != nil
                }
            }
            return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(applied == 0)
        for id in ids { await #expect(try vault.metadata(id).status == .revokePending) }
        // Planned from the row as it is now, it applies.
        var current = ScheduleUpdate(try await vault.metadata(ids[0]))
        current.refreshAt = fixture.clock.now.adding(seconds: 60)
        #expect(try await vault.updateSchedule(current)?.refreshAt == current.refreshAt)
    }

    /// Stores `id` and journals a refresh of it, as a node does before it calls the provider.
    static func refreshUnderWay(_ id: CredentialID, in fixture: TestBackendVault) async throws -> RefreshUnderWay {
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        let planned = try await fixture.vault.metadata(id)
        let request = Vault.AttemptRequest(
            metadata: planned, fingerprint: "fp", owner: "node-a", leaseUntil: fixture.clock.now.adding(seconds: 60),
            isOwnerGone: { _, _ in false })
        let (attempt, _) = try #require(try await fixture.vault.beginAttempt(request))
        return await RefreshUnderWay(
            planned: planned, attempt: attempt, previousSecrets: try fixture.vault.credential(id).secrets)
    }

    /// A refresh begun from `planned` (`refreshUnderWay`), whose provider's answer is still to commit.
    struct RefreshUnderWay {
        let planned: CredentialMetadata
        let attempt: RefreshAttempt
        let previousSecrets: CredentialSecrets

        /// Commits the provider's answer `payload`, as the engine does.
        func commit(_ payload: TokenPayload, in fixture: TestBackendVault) async -> HeldOrCommitted<Vault.RefreshCommit>
        {
            await fixture.vault.commitRefresh(
                .init(
                    attempt: attempt, previous: planned, previousSecrets: previousSecrets, payload: payload,
                    sentAt: fixture.clock.now))
        }
    }

    /// A credential marked for removal (on another node) while a refresh of it was in flight:
    /// the refresh's new tokens are stored, since its refresh token is spent, but the mark stays,
    /// with the removal's time for its next try, so that the removal revokes the new tokens.
    @Test(arguments: TestBackendKind.allCases)
    func aRefreshCommittedAfterARemovalWasAskedForKeepsTheRemovalPending(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let vault = fixture.vault
        let id = try CredentialID("pay/leaving")
        let refresh = try await Self.refreshUnderWay(id, in: fixture)
        let planned = refresh.planned
        var removal = await ScheduleUpdate(try vault.metadata(id))
        removal.expectedStatus = nil
        removal.status = .revokePending
        removal.refreshAt = fixture.clock.now.adding(seconds: 300)
        #expect(try await vault.updateSchedule(removal) != nil)

        let result = await refresh.commit(Self.payload("two"), in: fixture)
        guard case .committed(.committed(let after)) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(after.generation == planned.generation + 1)
        #expect(after.status == .revokePending && after.refreshAt == removal.refreshAt)
        let stored = try await vault.credential(id)
        #expect(stored.metadata.status == .revokePending)
        #expect(stored.secrets.accessToken.revealString() == "at-two")
    }

    /// A refresh whose credential was deleted and stored again while the provider was answering
    /// (generation 1 again) stores nothing over the new one and says so (the new row is there:
    /// the engine does not revoke the old grant's tokens, which could end the new grant's): the
    /// new credential keeps its tokens and shows no error.
    @Test(arguments: TestBackendKind.allCases)
    func aRefreshOfACredentialDeletedAndStoredAgainStoresNothing(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let vault = fixture.vault
        let id = try CredentialID("pay/again2")
        let refresh = try await Self.refreshUnderWay(id, in: fixture)
        fixture.clock.advance(seconds: 1)
        try await vault.delete(id)
        try await vault.put(id, payload: Self.payload("two"), provider: "idp")
        await #expect(try vault.metadata(id).generation == refresh.planned.generation)
        let result = await refresh.commit(Self.payload("three"), in: fixture)
        guard case .committed(.superseded(let why, let gone)) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(!gone && why.contains("deleted and stored again"), "\(why)")
        let stored = try await vault.credential(id)
        #expect(stored.secrets.accessToken.revealString() == "at-two")
        #expect(stored.metadata.lastError == nil)
    }

    /// A removal planned from an earlier row (the engine's retry of a revocation, from a cache
    /// that may be behind another node's delete and store again) removes nothing when the row
    /// under the lock is another one: the credential stored since keeps its refresh token.
    @Test(arguments: TestBackendKind.allCases)
    func aRemovalPlannedFromAnEarlierRowRemovesNothingStoredSince(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let vault = fixture.vault
        let id = try CredentialID("pay/removed")
        try await vault.put(id, payload: Self.payload("one"), provider: "idp")
        var marked = await ScheduleUpdate(try vault.metadata(id))
        marked.status = .revokePending
        #expect(try await vault.updateSchedule(marked) != nil)
        let planned = try await vault.metadata(id)
        fixture.clock.advance(seconds: 1)
        try await vault.delete(id)
        try await vault.put(id, payload: Self.payload("two"), provider: "idp")
        #expect(try await !vault.delete(id, ifStill: planned), "stored again since: kept")
        await #expect(try vault.credential(id).secrets.accessToken.revealString() == "at-two")
        #expect(try await vault.delete(id, ifStill: try vault.metadata(id)))
        await #expect(throws: VaultError.self) { try await vault.metadata(id) }
    }

    @Test(arguments: TestBackendKind.allCases)
    func migrationsAreAppliedOnceAndRecorded(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        #expect(try fixture.backend.pendingMigrations().isEmpty)
        #expect(try fixture.backend.migrate().isEmpty)
        let shipped = kind == .sqlite ? try EmbeddedMigrations.all() : try EmbeddedMigrations.postgres()
        await #expect(try fixture.backend.schemaVersion() == shipped.count)
        #expect(try fixture.backend.integrityCheck() == ["ok"])
    }

    /// Rekey over and over (each time a keyring opened with the new key), called from the
    /// concurrency pool as key rotation's route calls it: every term re-wrapped each time, the
    /// key check value the last key's, and the rows still open under it.
    @Test(arguments: TestBackendKind.allCases)
    func rekeyReWrapsEveryTermEachTime(_ kind: TestBackendKind) async throws {
        let fixture = try await TestBackendVault.make(kind)
        let id = try CredentialID("pay/rekeyed")
        try await fixture.vault.put(id, payload: Self.payload("r"), provider: "idp")
        _ = try fixture.keyring.addTerm()
        var keyring = fixture.keyring
        var master = fixture.masterKey
        for _ in 0..<12 {
            let next = SodiumRandom.secret(count: 32)
            try keyring.rekey(to: next, settings: [:])
            keyring = try Keyring(masterKey: next, store: fixture.backend)
            master = next
        }
        #expect(keyring.knownTerms == fixture.keyring.knownTerms)
        #expect(try fixture.backend.setting(VaultSetting.keyCheck) == KeyedHash.keyCheckValue(master))
        let reopened = Vault(store: fixture.backend, sealer: keyring)
        #expect(try await reopened.credential(id).secrets.accessToken.revealString() == "at-r")
    }
}
