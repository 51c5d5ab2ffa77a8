import Foundation
import NIOCore
import NIOPosix
import PostgresNIO
import TokenVaultCore

/// Changes made anywhere, as they commit: the change trigger NOTIFYs each one
/// (`tokenvault_changes`), and a connection of this process LISTENs. Each drops the row from the
/// cache and goes to the change handler. While the connection is lost the cache is not trusted;
/// once it is back the cache is emptied and the changes committed meanwhile are replayed from
/// `credential_changes`, so nothing is missed.
extension PostgresDatabase {
    public struct ListenerStatus: Sendable, Equatable {
        public var connected: Bool
        public var reconnects: Int
    }

    public var listenerStatus: ListenerStatus {
        listenerState.withLock { ListenerStatus(connected: $0.connected, reconnects: $0.reconnects) }
    }

    /// Seconds between pings of the listening connection; a ping unanswered this long means the
    /// connection is lost (a server or network that went silent sends no error).
    static let listenerPing = 5.0
    /// The listening connection's `application_name`.
    static let listenerApplicationName = "tokenvault change listener"

    /// Listens until the task is cancelled, reconnecting (with a growing pause, up to 5 s) when
    /// the connection is lost or stops answering its pings.
    public func listenForChanges() async {
        var disconnected = false
        var pause = 0.1
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.next(), configuration: connectionConfiguration,
                    id: Int.random(in: 0..<Int.max), logger: logger)
                defer { Task { try? await connection.close() } }
                // Each result read to its end: rows left unread hold up the connection's next query.
                // Named apart from the node's other connections in pg_stat_activity (its last
                // query there is its ping, not LISTEN).
                let sessions =
                    Self.sessionSettings(statementTimeoutSeconds: Self.listenerPing) + [
                        "SET application_name = '\(Self.listenerApplicationName)'"
                    ]
                for session in sessions {
                    _ = try await connection.query(PostgresQuery(unsafeSQL: session), logger: logger).collect()
                }
                let pings = Task { await ping(connection) }
                defer { pings.cancel() }
                try await connection.listen(on: "tokenvault_changes") { notifications in
                    // Listening now. Rows cached before (on the first connection too: reads that
                    // came before it, while changes went unheard) are dropped; after a lost
                    // connection, whatever committed meanwhile is replayed to the change handler.
                    cache.invalidateAll()
                    // A replay needs the floor the first connection marks; a first connection
                    // that failed before marking it marks it now instead.
                    if disconnected, listenerState.withLock({ $0.hasReplayFloor }) {
                        try await replay(on: connection)
                        listenerState.withLock { $0.reconnects += 1 }
                    } else {
                        try await markReplayFloor(on: connection)
                    }
                    listenerState.withLock { $0.connected = true }
                    cacheTrusted.store(true, ordering: .releasing)
                    pause = 0.1
                    for try await notification in notifications {
                        if let change = parse(notification.payload) { deliver(change) }
                    }
                }
            } catch {
                if !Task.isCancelled {
                    logger.warning(
                        "the PostgreSQL change listener lost its connection: \(PostgresLink.describe(error))")
                }
            }
            // Until the listener is back, every read goes to the database; the cached rows stay
            // only to stand in while the database cannot be reached, and are dropped on reconnect.
            cacheTrusted.store(false, ordering: .releasing)
            disconnected = true
            listenerState.withLock { $0.connected = false }
            try? await Task.sleep(for: .seconds(pause))
            pause = min(pause * 2, 5)
        }
    }

    private func deliver(_ change: Change) {
        // This node's own changes were dropped from its cache when their transactions ended,
        // or kept as committed: hearing of them again says nothing new, unless the transaction
        // ended not knowing whether it committed (`RecordCache.heardOwnChange`).
        if change.isOwn { cache.heardOwnChange(change.id) } else { cache.invalidate(change.id) }
        let seen = listenerState.withLock { state -> Bool in
            defer { state.lastSequence = max(state.lastSequence, change.sequence) }
            return state.delivered.contains(change.sequence)
        }
        guard !seen else { return }
        listenerState.withLock { state in
            state.delivered.insert(change.sequence)
            if state.delivered.count > 20_000 {
                let floor = state.lastSequence - 10_000
                state.delivered = state.delivered.filter { $0 > floor }
            }
        }
        changeHandler.withLock { $0 }?.call(change)
    }

    /// Pings the listening connection every `listenerPing` seconds; one not answered within that
    /// closes it, which ends the listen loop with an error (then it reconnects and replays).
    private func ping(_ connection: PostgresConnection) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(Self.listenerPing))
            guard !Task.isCancelled else { return }
            let watchdog = Task {
                try? await Task.sleep(for: .seconds(Self.listenerPing))
                guard !Task.isCancelled else { return }
                logger.warning("the PostgreSQL change listener stopped answering; reconnecting")
                try? await connection.close()
            }
            do {
                _ = try await connection.query("SELECT 1", logger: logger).collect()
                watchdog.cancel()
            } catch {
                watchdog.cancel()
                try? await connection.close()
                return
            }
        }
    }

    /// The changes committed since the last one delivered, by the database's sequence (never by
    /// comparing clocks). Sequence numbers are taken before commit, so one a little below the last
    /// delivered can still commit later: the replay starts `replayMargin` below it, and what was
    /// delivered already is skipped.
    private func replay(on connection: PostgresConnection) async throws {
        let after = listenerState.withLock { max($0.lastSequence - Self.replayMargin, $0.replayFloor) }
        let rows = try await connection.query(
            """
            SELECT seq, op, credential_id, old_generation, new_generation, old_status, new_status, failed, node
            FROM credential_changes WHERE seq > \(after) ORDER BY seq
            """, logger: logger)
        for try await (seq, op, id, oldGeneration, newGeneration, oldStatus, newStatus, failed, node) in rows.decode(
            (Int64, String, String, Int64?, Int64?, String?, String?, Bool, String?).self)
        {
            guard let operation = Change.Operation(rawValue: op), let id = try? CredentialID(id) else { continue }
            deliver(
                Change(
                    sequence: seq, operation: operation, id: id, oldGeneration: oldGeneration,
                    newGeneration: newGeneration,
                    oldStatus: oldStatus.flatMap(CredentialStatus.init),
                    newStatus: newStatus.flatMap(CredentialStatus.init),
                    failed: failed, isOwn: node == self.node,
                    signInEnd: Self.signInEnd(operation, newStatus)))
        }
    }

    /// The newest change when this process first listened: a replay never starts below it, so
    /// a node that lost its first connection before hearing anything does not announce again
    /// the changes made before it started (a credential's old sign-in end would end its watch).
    /// One committing late below it was heard while listening.
    private func markReplayFloor(on connection: PostgresConnection) async throws {
        let rows = try await connection.query("SELECT coalesce(max(seq), 0) FROM credential_changes", logger: logger)
        for try await newest in rows.decode(Int64.self) {
            listenerState.withLock {
                $0.replayFloor = max($0.replayFloor, newest)
                $0.hasReplayFloor = true
            }
        }
    }

    /// How far below the last delivered sequence a replay starts: more than the transactions all
    /// nodes can have open at once.
    static let replayMargin: Int64 = 10_000

    /// `seq|op|old generation|new generation|old status|new status|failed|node|id` (the id last:
    /// it cannot hold `|`, but the node name is the only other free text).
    func parse(_ payload: String) -> Change? {
        let fields = payload.split(separator: "|", maxSplits: 8, omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 9, let sequence = Int64(fields[0]), let operation = Change.Operation(rawValue: fields[1]),
            let id = try? CredentialID(fields[8])
        else {
            logger.error("an unreadable change notification was ignored")
            return nil
        }
        return Change(
            sequence: sequence, operation: operation, id: id, oldGeneration: Int64(fields[2]),
            newGeneration: Int64(fields[3]), oldStatus: CredentialStatus(rawValue: fields[4]),
            newStatus: CredentialStatus(rawValue: fields[5]), failed: fields[6] == "true", isOwn: fields[7] == node,
            signInEnd: Self.signInEnd(operation, fields[5]))
    }

    /// A `sign_in_ended` change carries the end's code where a row change has its new status
    /// (`SignInEnd.feedCode`).
    static func signInEnd(_ operation: Change.Operation, _ code: String?) -> SignInEnd? {
        operation == .signInEnded ? SignInEnd(feedCode: code ?? "") : nil
    }

    /// Changes older than `seconds` by the database's clock (the one that wrote `at`) are not
    /// needed for replay any more; a node whose clock runs ahead must not prune what others need.
    static func pruneChanges(olderThan seconds: Int64, on writer: PostgresLink) async throws {
        try await writer.query(
            """
            DELETE FROM credential_changes
            WHERE at < \(unescaped: PostgresDatabase.clockMilliseconds) - \(seconds * 1000)
            """)
    }
}
