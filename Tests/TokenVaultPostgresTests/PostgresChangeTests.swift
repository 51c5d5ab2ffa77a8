import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

/// What PostgreSQL adds to the contract: every node hears of every change (its own marked as
/// such), a node's cache never serves a row another node changed, and a node whose listening
/// connection was killed catches up on what it missed.
@Suite struct PostgresChangeTests {
    /// Collects the changes a database reports.
    final class Changes: Sendable {
        private let seen = Mutex<[PostgresDatabase.Change]>([])
        var all: [PostgresDatabase.Change] { seen.withLock { $0 } }
        func append(_ change: PostgresDatabase.Change) { seen.withLock { $0.append(change) } }
    }

    /// Node 1 (the fixture's vault) and node 2 (a second opening, listening for changes).
    struct TwoNodes {
        let fixture: TestBackendVault
        let node2: Vault
        let database2: PostgresDatabase
        let changes: Changes
        let listener: Task<Void, Never>

        func close() {
            listener.cancel()
            database2.close()
        }
    }

    static func twoNodes() async throws -> TwoNodes {
        let fixture = try await TestBackendVault.make(.postgres)
        let opened = try fixture.open(auditChain: "node-2")
        let database2 = try #require(opened.backend as? PostgresDatabase)
        let changes = Changes()
        database2.onChange { changes.append($0) }
        let listener = Task { await database2.listenForChanges() }
        let nodes = TwoNodes(
            fixture: fixture, node2: opened.vault, database2: database2, changes: changes, listener: listener)
        #expect(try await waitUntil(within: 30) { database2.listenerStatus.connected })
        return nodes
    }

    /// Lets this transaction sit idle past the server's 10 s limit: a test that holds a lock on
    /// purpose while another node tries it.
    static func allowIdling(_ writer: any CredentialWriter) async throws {
        try await (writer as! PostgresCredentialWriter).link.query(
            "SET LOCAL idle_in_transaction_session_timeout = '60s'")
    }

    /// A writer connection killed after its transaction's last statement and before its COMMIT
    /// (`pg_terminate_backend`, as an administrator or a failover does): the server rolled the
    /// transaction back, so the write fails as retryable and nothing of it is stored. (A link that
    /// connected again for the COMMIT would run it outside any transaction, where it succeeds: a
    /// refresh's new tokens reported stored and its answer let go, then its spent refresh token
    /// presented again.)
    @Test func aConnectionKilledBeforeItsCommitFailsTheWriteAndStoresNothing() async throws {
        let fixture = try await TestBackendVault.make(.postgres)
        let id = try CredentialID("pay/killed")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        let server = try #require(fixture.server)
        let database = try #require(fixture.postgresDatabase)
        let backend = fixture.backend
        let metadata = try await fixture.vault.metadata(id)
        var update = ScheduleUpdate(metadata)
        update.lastError = CredentialFailure(
            code: "marker", message: "written by the killed transaction", at: metadata.updatedAt)
        let written = update
        let outcome: Result<Void, any Error>
        do {
            try await backend.write(durability: .full) { writer in
                _ = try await writer.updateSchedule(written)
                // This connection now sits idle in its transaction: end it from outside.
                let ended = try server.psql(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        + "WHERE datname = '\(database)' AND state = 'idle in transaction'")
                #expect(ended.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "\(ended)")
            }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        guard case .failure(let error) = outcome else {
            Issue.record("the write reported success after its connection was killed")
            return
        }
        #expect((error as? VaultError)?.code == .storageUnavailable, "\(error)")
        await #expect(try fixture.vault.metadata(id).lastError == nil, "the killed transaction's write is stored")
    }

    /// A node frozen inside a transaction that holds a credential's lock (it sends nothing more):
    /// the server ends its session after 10 s of idleness, so another node's write of that
    /// credential goes through within seconds of that, not when the frozen node wakes or its
    /// connection is found dead.
    @Test func aNodeFrozenHoldingACredentialHoldsOthersOffItForSecondsOnly() async throws {
        let nodes = try await Self.twoNodes()
        defer { nodes.close() }
        let id = try CredentialID("pay/frozen")
        try await nodes.fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        let waited = try await Self.whileNode2IsFrozen(nodes, for: 90, holding: { _ = try await $0.record(id) }) {
            try await nodes.fixture.vault.put(id, payload: Self.payload("two"), provider: "idp")
        }
        // The server ends the session at 10 s; without that the write waits the whole 90 s freeze.
        // The bound leaves a loaded machine room (CI's took 21.7 s).
        #expect(waited < .seconds(45), "the write waited \(waited)")
    }

    /// A node frozen inside an audited transaction holds its own audit chain's turn only: another
    /// node's audited writes do not wait for it at all. (With one chain for the whole vault they
    /// waited until the frozen session ended.)
    @Test func aNodeFrozenInsideAnAuditedTransactionHoldsNoOtherNodeOff() async throws {
        let nodes = try await Self.twoNodes()
        defer { nodes.close() }
        try await nodes.node2.appendAudits([Self.audit(nil, nodes.fixture.clock.now)])
        let id = try CredentialID("pay/audited")
        let waited = try await Self.whileNode2IsFrozen(
            nodes, for: 90,
            holding: { writer in
                // The server would end the session at 10 s; let it hold for the whole freeze.
                try await Self.allowIdling(writer)
                try await writer.lockAuditChain("node-2")
            }
        ) {
            try await nodes.fixture.vault.put(
                id, payload: Self.payload("one"), provider: "idp", audit: Self.audit(id, nodes.fixture.clock.now))
            try await nodes.fixture.vault.appendAudits([Self.audit(nil, nodes.fixture.clock.now)])
        }
        // One lock for every chain made them wait the whole freeze (90 s); a loaded machine has
        // been seen taking 4.4 s without it.
        #expect(waited < .seconds(45), "the audited writes waited \(waited)")
        // Both chains verify, whoever reads them.
        let report = try await nodes.node2.verifyAudit()
        #expect(report.isClean && report.rows == 3, "\(report.failures)")
    }

    static func audit(_ id: CredentialID?, _ at: Timestamp) -> AuditEvent {
        AuditEvent(at: at, uid: 0, gid: 0, pid: 1, operation: .credentialPut, credentialID: id, outcome: .allowed)
    }

    /// Runs `write` on node 1 (again while it fails as retryable, for up to 25 s) while node 2 sits
    /// frozen for `seconds` in a transaction in which it did `hold`; returns how long `write` took.
    static func whileNode2IsFrozen(
        _ nodes: TwoNodes, for seconds: Double = 30,
        holding hold: @escaping @Sendable (any CredentialWriter) async throws -> Void,
        _ write: () async throws -> Void
    ) async throws -> Duration {
        let database2 = nodes.database2
        let holds = DispatchSemaphore(value: 0)
        // The transaction runs on a thread of the store's own, where its sleep stalls nobody else.
        let frozen = Task {
            try? await database2.write(durability: .full) { writer in
                try await hold(writer)
                holds.signal()
                try await Task.sleep(for: .seconds(seconds))
            }
        }
        try await offThePool { holds.wait() }
        let started = ContinuousClock.now
        var written = false
        while !written, ContinuousClock.now - started < .seconds(max(25, seconds * 2 / 3)) {
            do {
                try await write()
                written = true
            } catch let error as VaultError where error.code == .storageUnavailable {
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        let waited = ContinuousClock.now - started
        #expect(written, "the write never went through")
        // The frozen node has done its part: end its sleep rather than wait it out.
        frozen.cancel()
        _ = await frozen.value
        return waited
    }

    static func payload(_ marker: String) -> TokenPayload {
        TokenPayload(
            kind: .oauth2,
            secrets: CredentialSecrets(
                accessToken: SecretBytes(utf8: "at-\(marker)"), refreshToken: SecretBytes(utf8: "rt-\(marker)")),
            tokenType: "Bearer", expiry: .after(seconds: 3600))
    }

    /// The handler is called at the same depth however many changes came before. A closure kept
    /// directly in a `Mutex` was wrapped in two more reabstraction thunks at each delivery, so
    /// the n-th change ran through 2n of them: a third of a node's CPU after half a minute of
    /// refreshes, and a stack overflow after enough changes.
    @Test func theChangeHandlerDoesNotDeepenWithEachChange() async throws {
        let fixture = try await TestBackendVault.make(.postgres)
        let opened = try fixture.open()
        let database2 = try #require(opened.backend as? PostgresDatabase)
        let depths = Mutex<[Int]>([])
        database2.onChange { _ in
            let depth = Thread.callStackReturnAddresses.count
            depths.withLock { $0.append(depth) }
        }
        let listener = Task { await database2.listenForChanges() }
        defer {
            listener.cancel()
            database2.close()
        }
        #expect(try await waitUntil(within: 30) { database2.listenerStatus.connected })
        let id = try CredentialID("pay/deep")
        for round in 0..<60 {
            try await fixture.vault.put(id, payload: Self.payload("\(round)"), provider: "idp")
        }
        #expect(try await waitUntil { depths.withLock { $0.count } >= 60 })
        let seen = depths.withLock { $0 }
        // Foundation reports at most 128 frames: the first delivery must be well below that for
        // the comparison to mean anything (120 thunks are added by the 60th without the fix).
        #expect(seen[0] < 60)
        #expect(seen.max() == seen[0], "stack depths at delivery: \(seen)")
    }

    /// Nodes spread the due list: a node's scan claims what it returns for a few seconds, so
    /// another node's scan gets the rest instead of the same head (without claims every node
    /// started every due credential and all but one found the lease taken: two skipped
    /// refreshes per refresh with three nodes).
    @Test func aDueScanClaimsWhatItReturnsForAFewSeconds() async throws {
        let nodes = try await Self.twoNodes()
        defer { nodes.close() }
        let (fixture, node2) = (nodes.fixture, nodes.node2)
        for number in 0..<4 {
            try await fixture.vault.put(
                try CredentialID("pay/due\(number)"), payload: Self.payload("\(number)"), provider: "idp")
        }
        let later = fixture.clock.now.adding(seconds: 86_400)
        let first = try await fixture.vault.dueCredentials(at: later, limit: 2)
        #expect(first.count == 2)
        let second = try await node2.dueCredentials(at: later, limit: 10)
        #expect(second.count == 2)
        #expect(Set(second.map(\.id)).isDisjoint(with: first.map(\.id)))
        // A node's own claims come back to it; the other's do not.
        await #expect(Set(try fixture.vault.dueCredentials(at: later, limit: 10).map(\.id)) == Set(first.map(\.id)))
        // Once the claims are over, any node gets everything due.
        await #expect(try node2.dueCredentials(at: later.adding(seconds: 6), limit: 10).count == 4)
        // What a node skips (its refreshes in flight) it does not return, but it keeps their
        // lapsed claims: the other node does not start what this one has in flight.
        let atLast = later.adding(seconds: 12)
        let all = try await fixture.vault.dueCredentials(at: atLast, limit: 10, skipping: []).map(\.id)
        let skipped = Set(all.prefix(1))
        let afterSkipping = try await fixture.vault.dueCredentials(
            at: atLast.adding(seconds: 6), limit: 10, skipping: skipped)
        #expect(afterSkipping.count == 3 && Set(afterSkipping.map(\.id)).isDisjoint(with: skipped))
        await #expect(try node2.dueCredentials(at: atLast.adding(seconds: 6), limit: 10).isEmpty)
        // Once this node stops scanning, its claims lapse and the other node gets everything.
        await #expect(try node2.dueCredentials(at: atLast.adding(seconds: 12), limit: 10).count == 4)
    }

    @Test func everyNodeHearsEveryChangeAndItsCacheFollows() async throws {
        let nodes = try await Self.twoNodes()
        defer { nodes.close() }
        let (fixture, node2, changes) = (nodes.fixture, nodes.node2, nodes.changes)

        let id = try CredentialID("pay/watched")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        // Node 2 reads (and caches) the row; node 1 replaces it; node 2 must not serve the old one.
        await #expect(try node2.credential(id).secrets.accessToken.revealString() == "at-one")
        try await fixture.vault.put(id, payload: Self.payload("two"), provider: "idp")
        #expect(try await waitUntil { changes.all.count >= 2 })
        await #expect(try node2.credential(id).secrets.accessToken.revealString() == "at-two")
        try await fixture.vault.delete(id)
        #expect(try await waitUntil { changes.all.count >= 3 })
        await #expect(throws: VaultError.self) { try await node2.metadata(id) }

        let seen = changes.all
        #expect(seen.map(\.operation) == [.insert, .update, .delete])
        #expect(seen.allSatisfy { $0.id == id && !$0.isOwn })
        #expect(seen[1].oldGeneration == 1 && seen[1].newGeneration == 2)
        // A node's own change reaches it too, marked as its own, and leaves the row it wrote
        // in its cache; another node's next change still reaches it.
        try await node2.put(id, payload: Self.payload("three"), provider: "idp")
        #expect(try await waitUntil { changes.all.count >= 4 })
        #expect(changes.all.last?.isOwn == true)
        let before = nodes.database2.rowCacheStatistics
        await #expect(try node2.credential(id).secrets.accessToken.revealString() == "at-three")
        #expect(nodes.database2.rowCacheStatistics.misses == before.misses, "served from memory")
        try await fixture.vault.put(id, payload: Self.payload("four"), provider: "idp")
        #expect(try await waitUntil { changes.all.count >= 5 })
        await #expect(try node2.credential(id).secrets.accessToken.revealString() == "at-four")
    }

    /// A page of the listing kept on node 2 stops being current once node 1's change is heard
    /// there (`Vault.isCurrent`), and none is kept before node 2 listens: until then it would
    /// not hear of changes at all.
    @Test func aListingMarkFollowsOtherNodesChanges() async throws {
        let fixture = try await TestBackendVault.make(.postgres)
        let opened = try fixture.open(auditChain: "node-2")
        let database2 = try #require(opened.backend as? PostgresDatabase)
        defer { database2.close() }
        #expect(opened.vault.listingMark() == nil, "not listening yet")
        let listener = Task { await database2.listenForChanges() }
        defer { listener.cancel() }
        #expect(try await waitUntil(within: 30) { database2.listenerStatus.connected })
        let mark = try #require(opened.vault.listingMark())
        try await fixture.vault.put(try CredentialID("pay/listed"), payload: Self.payload("one"), provider: "idp")
        #expect(try await waitUntil { !opened.vault.isCurrent(mark) })
        // Listening still: the count moved, not the trust.
        let now = try #require(opened.vault.listingMark())
        #expect(now != mark && opened.vault.isCurrent(now))
    }

    /// A commit of this node whose outcome it could not learn (its connection lost, its deadline
    /// passed) may land after its write ended and a read cached the row from before it. Its
    /// notification is this node's own, and must still drop that row: the cache would otherwise
    /// serve it until another node changed the credential. Here the writer's end is played as
    /// after such a COMMIT, and the late commit made by hand under node 2's name.
    @Test func anOwnChangeTheCachedRowDoesNotReflectStillDropsIt() async throws {
        let nodes = try await Self.twoNodes()
        defer { nodes.close() }
        let (fixture, database2, changes) = (nodes.fixture, nodes.database2, nodes.changes)
        let id = try CredentialID("pay/late")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        #expect(try await waitUntil { changes.all.count >= 1 })
        var writes = RecordCache.Writes()
        writes.touch(id, in: database2.cache)
        database2.cache.end(writes, committed: false)
        await #expect(try database2.record(id)?.metadata.status == .active)
        #expect(database2.cache.record(id) != nil, "cached")

        let server = try #require(fixture.server)
        let node = database2.node.replacingOccurrences(of: "'", with: "''")
        _ = try server.psql(
            "SET tokenvault.node = '\(node)'; UPDATE credentials SET status = 'needs_reauth' WHERE id = '\(id)'",
            database: try #require(fixture.postgresDatabase))
        #expect(try await waitUntil { changes.all.count >= 2 })
        #expect(changes.all.last?.isOwn == true)
        await #expect(try database2.record(id)?.metadata.status == .needsReauth)
    }

    /// Rows a node cached before its listener first connected (reads come before it) may be
    /// behind changes it never heard: they are dropped once it listens, as after a reconnect.
    @Test func rowsCachedBeforeTheListenerFirstConnectedAreDropped() async throws {
        let fixture = try await TestBackendVault.make(.postgres)
        let opened = try fixture.open(auditChain: "node-2")
        let database2 = try #require(opened.backend as? PostgresDatabase)
        defer { database2.close() }
        let id = try CredentialID("pay/early")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        await #expect(try opened.vault.credential(id).secrets.accessToken.revealString() == "at-one")
        try await fixture.vault.put(id, payload: Self.payload("two"), provider: "idp")
        let listener = Task { await database2.listenForChanges() }
        defer { listener.cancel() }
        #expect(try await waitUntil(within: 30) { database2.listenerStatus.connected })
        await #expect(try opened.vault.credential(id).secrets.accessToken.revealString() == "at-two")
    }

    /// A row read under its lock is the database's: whatever the cache held of it (behind a
    /// change not heard yet) is dropped when the transaction ends, so a refresh refused because
    /// the cached row was older is not refused again and again until another change comes.
    @Test func aRowReadUnderItsLockReplacesWhatTheCacheHeld() async throws {
        let nodes = try await Self.twoNodes()
        defer { nodes.close() }
        let (fixture, node2, database2, changes) = (nodes.fixture, nodes.node2, nodes.database2, nodes.changes)
        let id = try CredentialID("pay/behind")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        let old = try await #require(try database2.record(id))
        try await fixture.vault.put(id, payload: Self.payload("two"), provider: "idp")
        #expect(try await waitUntil { changes.all.count >= 2 })
        // Behind again, as if node 1's change had not been heard yet.
        database2.cache.insert(old, ticket: database2.cache.ticket(for: id))
        database2.cache.insert(old, ticket: database2.cache.ticket(for: id))
        #expect(database2.cache.record(id) == old)
        let request = Vault.AttemptRequest(
            metadata: old.metadata, fingerprint: "fp", owner: "node-2",
            leaseUntil: fixture.clock.now.adding(seconds: 60), isOwnerGone: { _, _ in false })
        #expect(try await node2.beginAttempt(request) == nil, "planned from the older row: not started")
        #expect(database2.cache.record(id) == nil, "and the older row is gone from the cache")
        await #expect(try node2.credential(id).secrets.accessToken.revealString() == "at-two")
    }

    /// A write that waits for a row another node holds locked gives up after the lock timeout
    /// (5 s) as `storage_unavailable`, which callers retry, instead of waiting as long as that
    /// node's transaction lasts; once the row is free the same write succeeds.
    @Test func aWriteWaitingOnARowAnotherNodeHoldsGivesUpAsRetryable() async throws {
        let nodes = try await Self.twoNodes()
        defer { nodes.close() }
        let id = try CredentialID("pay/locked")
        try await nodes.fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        let record = try await #require(try nodes.database2.record(id))
        let database2 = nodes.database2
        // On a thread of the store's own, where its sleep stalls nobody else.
        let holds = DispatchSemaphore(value: 0)
        let holding = Task {
            try? await database2.write(durability: .full) { writer in
                try await Self.allowIdling(writer)
                try await writer.save(record)
                holds.signal()
                // Long enough that a loaded machine cannot let it end before node 1 has tried.
                try await Task.sleep(for: .seconds(50))
            }
        }
        try await offThePool { holds.wait() }
        let node1 = nodes.fixture.backend
        let started = ContinuousClock.now
        await #expect {
            try await node1.write(durability: .full) { writer in try await writer.save(record) }
        } throws: {
            ($0 as? VaultError)?.code == .storageUnavailable
        }
        let waited = ContinuousClock.now - started
        // The 5 s lock timeout, with room for a loaded machine, and well short of the 50 s hold.
        #expect(waited >= .seconds(4) && waited < .seconds(25), "waited \(waited)")
        holding.cancel()
        _ = await holding.value
        try await node1.write(durability: .full) { writer in try await writer.save(record) }
    }

    /// Refresh work spreads over the nodes instead of queueing: a node does not wait for a
    /// credential another node is writing; it skips it at once.
    @Test func aNodeSkipsCredentialsAnotherNodeIsRefreshing() async throws {
        let nodes = try await Self.twoNodes()
        defer { nodes.close() }
        let fixture = nodes.fixture
        let id = try CredentialID("pay/claimed")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        let record = try await #require(try nodes.database2.record(id))
        let database2 = nodes.database2
        // Node 2 in the middle of writing the credential, as the ledger writes one: its lock
        // first (`record`), then the row. On a thread of the store's own.
        let holds = DispatchSemaphore(value: 0)
        let released = Atomic(false)
        async let holding: Void = database2.write(durability: .full) { writer in
            try await Self.allowIdling(writer)
            _ = try await writer.record(id)
            try await writer.save(record)
            holds.signal()
            // Long enough that a loaded machine cannot let it end before node 1 has tried.
            try await Task.sleep(for: .seconds(10))
            released.store(true, ordering: .sequentiallyConsistent)
        }
        // Until node 2 holds the lock (a fixed head start was not enough on a loaded machine).
        try await offThePool { holds.wait() }
        let metadata = try await fixture.vault.metadata(id)
        func request(_ owner: String) -> Vault.AttemptRequest {
            Vault.AttemptRequest(
                metadata: metadata, fingerprint: "fp", owner: owner,
                leaseUntil: fixture.clock.now.adding(seconds: 10_000),
                isOwnerGone: { _, _ in false })
        }
        #expect(try await fixture.vault.beginAttempt(request("node-a")) == nil)
        // Not a wall-clock bound (a loaded machine makes any one slow): node 1 must have given up
        // while node 2 still held the credential.
        let stillHeld = !released.load(ordering: .sequentiallyConsistent)
        #expect(stillHeld, "node 1 waited for node 2's write")
        try await holding

        // Once node 2's write is done, node 1 journals the attempt.
        #expect(try await fixture.vault.beginAttempt(request("node-a")) != nil)
    }

    /// The cache is used only while the listener is connected; a node that lost it reads the
    /// database, and once back it replays the changes committed meanwhile.
    @Test func aNodeWhoseListenerWasKilledCatchesUp() async throws {
        let nodes = try await Self.twoNodes()
        defer { nodes.close() }
        let (fixture, node2, database2, changes) = (nodes.fixture, nodes.node2, nodes.database2, nodes.changes)
        let id = try CredentialID("pay/missed")
        try await fixture.vault.put(id, payload: Self.payload("one"), provider: "idp")
        _ = try await node2.credential(id)

        // Kill the nodes' listening connections. By name: the last query pg_stat_activity shows
        // for one is its ping as often as its LISTEN (the test failed whenever a ping came first).
        let server = try #require(fixture.server)
        try server.psql(
            """
            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = '\(fixture.postgresDatabase!)' AND application_name = 'tokenvault change listener'
            """)
        #expect(try await waitUntil { !database2.listenerStatus.connected })
        // Meanwhile node 1 changes the row: node 2 must not serve the old one, cache or not.
        try await fixture.vault.put(id, payload: Self.payload("two"), provider: "idp")
        await #expect(try node2.credential(id).secrets.accessToken.revealString() == "at-two")
        #expect(try await waitUntil(within: 15) { database2.listenerStatus.reconnects >= 1 })
        #expect(try await waitUntil { changes.all.contains { $0.operation == .update && $0.newGeneration == 2 } })
    }

    /// PostgreSQL stopped: a write fails at once as `storage_unavailable` instead of hanging;
    /// tokens a provider has just issued are held in memory, not lost; when the server is back,
    /// the connection is remade and the held write commits by itself.
    @Test func aStoppedServerFailsWritesFastAndHeldTokensCommitWhenItIsBack() async throws {
        let server = try await TestPostgres.dedicated()
        defer { server.destroy() }
        let fixture = try await TestBackendVault.make(on: server)
        let vault = fixture.vault
        let id = try CredentialID("pay/outage")
        try await vault.put(id, payload: Self.payload("one"), provider: "idp")

        try await server.stopAsync()
        let started = ContinuousClock.now
        await #expect(throws: VaultError.self) {
            try await vault.put(try CredentialID("pay/refused"), payload: Self.payload("x"), provider: "idp")
        }
        #expect(ContinuousClock.now - started < .seconds(10), "a write to a stopped server should fail promptly")
        let received = try await vault.storeReceived(
            Vault.NewCredential(id: id, payload: Self.payload("issued"), provider: "idp"))
        #expect(received.isHeld)
        #expect(vault.pendingCommitCount == 1)

        try await server.startAsync()
        #expect(try await waitUntil(within: 40) { vault.pendingCommitCount == 0 }, "the held write never committed")
        // A reader connection that was refused moments ago fails at once for up to half a
        // second (PostgresLink.refusalMemory) before it connects again.
        #expect(try await waitUntil(within: 5) { (try? await vault.credential(id)) != nil })
        await #expect(try vault.credential(id).secrets.accessToken.revealString() == "at-issued")
        await #expect(try vault.metadata(id).generation == 2)
    }

    @Test func urlsAreReadLikeLibpqAndNeverHoldAPassword() throws {
        typealias Configuration = PostgresDatabase.Configuration
        let tcp = try Configuration(
            url: "postgres://vault@db.internal:6432/tokens?sslmode=verify-full&sslrootcert=/etc/ca.pem", password: "p")
        #expect(tcp.endpoint == .tcp(host: "db.internal", port: 6432) && tcp.database == "tokens")
        #expect(tcp.tls == .verifyFull(caFile: "/etc/ca.pem") && tcp.username == "vault" && tcp.password == "p")
        let socket = try Configuration(url: "postgresql://vault@/tokens?host=/run/postgresql", password: nil)
        #expect(socket.endpoint == .socket(path: "/run/postgresql/.s.PGSQL.5432") && socket.tls == .disable)
        #expect(try Configuration(url: "postgres://v@h/d?sslmode=require&readers=2", password: nil).readers == 2)
        for bad in [
            "postgres://vault:secret@h/d",  // a password in the URL
            "postgres://vault@h/d",  // verify-full (the default over TCP) without a CA
            "mysql://vault@h/d", "postgres://@h/d?sslmode=disable", "postgres://v@h/?sslmode=disable",
            "postgres://v@h/d?sslmode=prefer", "postgres://v@h/d?sslmode=disable&bogus=1",
            "postgres://v@/d?host=relative", "postgres://v@/d?host=/run&sslmode=require",
            "postgres://v@h:1/d?port=2&sslmode=disable", "postgres://v@h/d?sslmode=disable&readers=0",
        ] {
            #expect(throws: VaultError.self, "\(bad)") { try Configuration(url: bad, password: nil) }
        }
        // The refusal never repeats the password.
        do {
            _ = try Configuration(url: "postgres://vault:hunter2@h/d", password: nil)
        } catch {
            #expect(!"\(error)".contains("hunter2"))
        }
    }
}
