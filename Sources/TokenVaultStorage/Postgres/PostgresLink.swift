import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import TokenVaultCore

/// One PostgreSQL connection, used by one holder at a time (a `ConnectionLender` lends it): every
/// statement is awaited with a deadline of its own, because a query on a connection the server
/// has dropped may never complete (postgres-nio 1.33.2). No thread waits for an answer: the
/// deadline is a task scheduled on the connection's event loop. A connection that failed is
/// closed and a new one is made for the next statement, but never inside a transaction
/// (`pinned`); the failure is reported as `storage_unavailable`, which callers (the ledger's held
/// commits, the engine) retry.
final class PostgresLink: Sendable {
    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let statementTimeout: TimeAmount
    private let name: String
    /// Statements run on every new connection (the node's name for the change trigger).
    private let setup: [String]
    private let connection = Mutex<PostgresConnection?>(nil)
    /// When the last attempt to connect failed, and why: for a moment after, statements fail at
    /// once instead of each waiting out a connect timeout (reads then fall back to the cache).
    private let lastRefusal = Mutex<(at: ContinuousClock.Instant, reason: String)?>(nil)
    static let refusalMemory = Duration.milliseconds(500)

    /// Whether the last attempt to connect failed moments ago: the database cannot be reached.
    var isRefusing: Bool {
        guard let refusal = lastRefusal.withLock({ $0 }) else { return false }
        return ContinuousClock.now - refusal.at < Self.refusalMemory
    }
    /// Statements sent without waiting (`send`), on the connection they were sent on: the next
    /// statement that waits checks them, so their failure surfaces there.
    private let unsettled = Mutex<(connection: PostgresConnection, results: [EventLoopFuture<PostgresQueryResult>])?>(
        nil)
    /// The connection the running transaction began on: every statement of it must go there. A
    /// connection lost mid-transaction took the transaction with it (the server rolled it back),
    /// so a statement that connected again would run outside it, and a COMMIT there would report
    /// a commit that never happened (a refresh's new tokens "stored", its answer let go).
    private let pinned = Mutex<PostgresConnection?>(nil)
    /// The prepared statements that have run on the open connection, by the connection's id
    /// (`execute`).
    private let proven = Mutex<(connection: PostgresConnection.ID, names: Set<String>)?>(nil)

    init(
        configuration: PostgresConnection.Configuration, name: String, setup: [String] = [],
        statementTimeout: TimeAmount, logger: Logger
    ) {
        self.configuration = configuration
        self.name = name
        self.setup = setup
        self.statementTimeout = statementTimeout
        self.logger = logger
    }

    /// Runs `query` and returns every row (read to the end, so no error is left in the stream).
    /// Statements sent before it without waiting are checked first: the first of them that failed
    /// is the error thrown.
    @discardableResult
    func query(_ query: PostgresQuery) async throws -> PostgresQueryResult {
        let connection = try await current()
        let sent = try takeUnsettled(on: connection)
        let result = started(query, on: connection)
        do {
            return try await answers(sent + [result], on: connection)[sent.count]
        } catch {
            throw failure(error, connection: connection)
        }
    }

    /// Runs `statement` prepared (`execute(_:)` of several, for one).
    func execute(_ statement: some PreparedStatement) async throws -> [PostgresRow] {
        try await execute([statement])[0]
    }

    /// Runs `statements` back to back as statements PostgreSQL parsed and planned once on this
    /// connection (postgres-nio prepares each by name at its first use on a connection) instead
    /// of parsing, analysing and planning their text on every call, as unnamed statements are:
    /// for a point read that is about half of PostgreSQL's work (docs/benchmarks.md). A task on
    /// the connection's event loop (`EventLoopTaskExecutor`) runs them one after the other, as
    /// `pipeline` does, so the caller is woken once, by the last answer or by the deadline.
    ///
    /// postgres-nio keeps a statement prepared, or its failed preparation, for the connection's
    /// life. So a refusal outside a transaction closes the connection, and a statement prepared
    /// before its table changed (another node's migration: "cached plan must not change result
    /// type") runs once more on a new connection. Inside a transaction, a stale plan or a refusal
    /// of a statement that never ran on this connection (its preparation may be what failed: a
    /// lock timeout behind a migration, an aborted transaction) closes the connection too and
    /// fails as retryable; any other refusal is the transaction's own (rolled back on this
    /// connection, as for text).
    func execute(_ statements: [any PreparedStatement]) async throws -> [[PostgresRow]] {
        let inTransaction = pinned.withLock { $0 } != nil
        for attempt in 1...2 {
            let connection = try await current()
            let sent = try takeUnsettled(on: connection)
            let answers = connection.eventLoop.makePromise(of: [[PostgresRow]].self)
            Task(executorPreference: EventLoopTaskExecutor(connection.eventLoop)) { [logger] in
                do {
                    for earlier in sent { _ = try await earlier.get() }
                    var all: [[PostgresRow]] = []
                    for statement in statements {
                        all.append(try await Self.rows(of: statement, on: connection, logger))
                    }
                    answers.succeed(all)
                } catch {
                    answers.fail(error)
                }
            }
            let names = statements.map { type(of: $0).name }
            let proven = self.proven.withLock { $0?.connection == connection.id ? $0!.names : [] }
            do {
                let rows = try await answered(answers.futureResult, on: connection)
                self.proven.withLock { proven in
                    if proven?.connection != connection.id { proven = (connection.id, []) }
                    proven?.names.formUnion(names)
                }
                return rows
            } catch {
                // A lost connection (a timeout included) is dropped by `failure`; what is left is
                // the server's refusal, read before `failure` turns a transient one into
                // `storage_unavailable`.
                let thrown = failure(error, connection: connection)
                guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { throw thrown }
                let stale = Self.preparedAgainStates.contains(state)
                // A statement that never ran here may have been refused at its preparation,
                // which postgres-nio would answer with for the connection's life.
                let unproven = !proven.isSuperset(of: names)
                if !inTransaction || stale || unproven { drop(connection) }
                if inTransaction {
                    guard stale || unproven else { throw thrown }
                    throw VaultError.storageUnavailable(
                        "PostgreSQL refused a prepared statement (\(name)), whose connection is replaced: \(thrown)")
                }
                if !stale || attempt == 2 { throw thrown }
            }
        }
        preconditionFailure("the second attempt returns or throws")
    }

    /// A prepared statement's plan no longer fits its tables (0A000, "cached plan must not
    /// change result type"), or the session does not have it (26000): prepared again.
    static let preparedAgainStates: Set<String> = ["0A000", "26000"]

    private static func rows(of statement: some PreparedStatement, on connection: PostgresConnection, _ logger: Logger)
        async throws -> [PostgresRow]
    {
        var rows: [PostgresRow] = []
        for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
        return rows
    }

    /// Runs `queries` back to back, the caller woken once, and returns each one's rows; the first
    /// that failed is the error thrown. Not one network round trip: postgres-nio 1.33 sends each
    /// statement once the one before is answered (on its event loop); what is saved is a wake-up
    /// of the caller per statement.
    func pipeline(_ queries: [PostgresQuery]) async throws -> [PostgresQueryResult] {
        guard !queries.isEmpty else { return [] }
        let connection = try await current()
        let sent = try takeUnsettled(on: connection)
        let results = queries.map { started($0, on: connection) }
        do {
            return Array(try await answers(sent + results, on: connection).dropFirst(sent.count))
        } catch {
            throw failure(error, connection: connection)
        }
    }

    /// Sends `query` without waiting for its answer, for statements whose answer says nothing
    /// (BEGIN, SET, SAVEPOINT): the next statement that waits checks it. Saves the caller a
    /// wake-up per statement; the server still answers each in turn.
    func send(_ query: PostgresQuery) async throws {
        let connection = try await current()
        let sent = try takeUnsettled(on: connection)
        let result = started(query, on: connection)
        unsettled.withLock { $0 = (connection, sent + [result]) }
    }

    /// Statements sent without waiting, which must have gone on `connection`: a statement sent on
    /// a connection since lost (a BEGIN, say) must not be followed by one on a new connection,
    /// which would run outside the transaction.
    private func takeUnsettled(on connection: PostgresConnection) throws -> [EventLoopFuture<PostgresQueryResult>] {
        guard
            let sent = unsettled.withLock({ unsettled in
                defer { unsettled = nil }; return unsettled
            })
        else {
            return []
        }
        guard sent.connection === connection else {
            throw VaultError.storageUnavailable("the PostgreSQL connection (\(name)) was lost mid-transaction")
        }
        return sent.results
    }

    /// Runs `body` in one transaction on this connection: BEGIN (and the `begin` statements after
    /// it, sent without waiting), then COMMIT when it returns, ROLLBACK when it throws (not
    /// attempted on a connection that was lost) or when `body` left `rollbackOnly` true.
    func transaction<Result>(
        begin: [String] = [], rollbackOnly: () -> Bool = { false }, _ body: () async throws -> Result
    ) async throws -> Result {
        let connection = try await beginTransaction(begin)
        defer { pinned.withLock { $0 = nil } }
        do {
            let result = try await body()
            try await query(rollbackOnly() ? "ROLLBACK" : "COMMIT")
            return result
        } catch {
            await abandonTransaction(on: connection)
            throw error
        }
    }

    /// Pins the open connection to the transaction and sends BEGIN and `begin` without waiting.
    private func beginTransaction(_ begin: [String]) async throws -> PostgresConnection {
        let connection = try await current()
        pinned.withLock { $0 = connection }
        do {
            for statement in ["BEGIN"] + begin { try await send(PostgresQuery(unsafeSQL: statement)) }
        } catch {
            await abandonTransaction(on: connection)
            pinned.withLock { $0 = nil }
            throw error
        }
        return connection
    }

    /// Rolls back a transaction that failed, unless its connection was lost (the server rolled
    /// it back with the connection).
    private func abandonTransaction(on connection: PostgresConnection) async {
        if self.connection.withLock({ $0 }) === connection, !connection.isClosed {
            _ = try? await query("ROLLBACK")
        } else {
            // What was sent on it without waiting must not meet the link's next holder.
            drop(connection)
        }
    }

    deinit {
        if let open = connection.withLock({ $0 }) { Self.closeEventually(open) }
    }

    /// Closes `connection` without waiting, holding it until it is closed (postgres-nio asserts
    /// that a connection is closed before it goes away).
    static func closeEventually(_ connection: PostgresConnection) {
        let closing: EventLoopFuture<Void> = connection.close()
        closing.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    func close() {
        guard
            let open = connection.withLock({ connection in
                defer { connection = nil }
                return connection
            })
        else { return }
        unsettled.withLock { $0 = nil }
        _ = try? open.close().wait()
    }

    /// The open connection, or a new one; inside a transaction, its own connection or an error.
    private func current() async throws -> PostgresConnection {
        if let pinned = pinned.withLock({ $0 }) {
            guard !pinned.isClosed, connection.withLock({ $0 }) === pinned else {
                throw VaultError.storageUnavailable("the PostgreSQL connection (\(name)) was lost mid-transaction")
            }
            return pinned
        }
        if let open = connection.withLock({ $0 }), !open.isClosed { return open }
        if let refusal = lastRefusal.withLock({ $0 }), ContinuousClock.now - refusal.at < Self.refusalMemory {
            throw VaultError.storageUnavailable("cannot connect to PostgreSQL (\(name)): \(refusal.reason)")
        }
        let made: PostgresConnection
        do {
            made = try await PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration,
                id: Int.random(in: 0..<Int.max), logger: logger
            ).get()
        } catch {
            let reason = Self.describe(error)
            lastRefusal.withLock { $0 = (ContinuousClock.now, reason) }
            throw VaultError.storageUnavailable("cannot connect to PostgreSQL (\(name)): \(reason)")
        }
        lastRefusal.withLock { $0 = nil }
        do {
            for statement in setup {
                _ = try await answered(started(PostgresQuery(unsafeSQL: statement), on: made), on: made)
            }
        } catch {
            try? await made.close()
            throw VaultError.storageUnavailable(
                "cannot prepare a PostgreSQL connection (\(name)): \(Self.describe(error))")
        }
        connection.withLock { $0 = made }
        return made
    }

    /// Sends `query` and answers its rows' future, which `answered` awaits with the deadline
    /// (postgres-nio's async `query` of the same name, preferred in async code, has none).
    private func started(_ query: PostgresQuery, on connection: PostgresConnection)
        -> EventLoopFuture<PostgresQueryResult>
    {
        connection.query(query, logger: logger)
    }

    /// The answers of `futures`, sent in this order on `connection`, awaited once: the
    /// connection answers in order, so once the last is answered so are the others (unless it
    /// never is: then the deadline ends the wait). The first that failed is the error thrown.
    private func answers(_ futures: [EventLoopFuture<PostgresQueryResult>], on connection: PostgresConnection)
        async throws -> [PostgresQueryResult]
    {
        let all = EventLoopFuture.whenAllComplete(futures, on: connection.eventLoop)
        return try await answered(all, on: connection).map { try $0.get() }
    }

    /// What `future` gives, or `PostgresLinkTimeout` once `statementTimeout` has passed.
    private func answered<Value: Sendable>(_ future: EventLoopFuture<Value>, on connection: PostgresConnection)
        async throws -> Value
    {
        let promise = connection.eventLoop.makePromise(of: Value.self)
        let settled = Atomic<Bool>(false)
        let timer = connection.eventLoop.scheduleTask(in: statementTimeout) {
            if settled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
                promise.fail(PostgresLinkTimeout())
            }
        }
        future.whenComplete { result in
            timer.cancel()
            if settled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
                promise.completeWith(result)
            }
        }
        return try await promise.futureResult.get()
    }

    /// The error to throw for `error`; a lost connection is dropped (and closed) first.
    private func failure(_ error: any Error, connection lost: PostgresConnection) -> any Error {
        if let vaultError = error as? VaultError { return vaultError }
        if Self.isConnectionLost(error) {
            drop(lost)
            return VaultError.storageUnavailable(
                "the PostgreSQL connection (\(name)) was lost: \(Self.describe(error))")
        }
        let statementError = PostgresStatementError(underlying: error)
        if let state = statementError.sqlState, Self.transientStates.contains(state) {
            return VaultError.storageUnavailable("PostgreSQL (\(name)) refused for now: \(statementError)")
        }
        return statementError
    }

    /// Forgets `connection` (and what was sent on it) and closes it: the next statement connects anew.
    private func drop(_ connection: PostgresConnection) {
        self.connection.withLock { if $0 === connection { $0 = nil } }
        unsettled.withLock { if $0?.connection === connection { $0 = nil } }
        Self.closeEventually(connection)
    }

    /// Refusals that say nothing about the statement itself, only about the moment: a deadlock,
    /// a serialization failure, a lock not had within `lock_timeout`, a server whose disk is full
    /// (53100, `could not extend file`; not 53200, out of memory, which a statement can meet
    /// every time it runs). The transaction is rolled back and the
    /// same write may succeed when tried again, so callers see `storage_unavailable` (which the
    /// ledger's held commits and the engine retry). A cancelled statement (57014, also a
    /// server-side `statement_timeout`) is not among them: a write that always takes longer would
    /// be retried for ever.
    static let transientStates: Set<String> = ["40P01", "40001", "55P03", "53100"]

    static func isConnectionLost(_ error: any Error) -> Bool {
        if error is PostgresLinkTimeout { return true }
        guard let psql = error as? PSQLError else { return false }
        switch psql.code {
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown: return true
        case .server:
            let state = psql.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(state)
        default: return false
        }
    }

    /// What PostgreSQL said, without the statement's text (`String(reflecting:)` can hold SQL;
    /// bind values are never logged by postgres-nio).
    static func describe(_ error: any Error) -> String {
        if let psql = error as? PSQLError {
            if let state = psql.serverInfo?[.sqlState], let message = psql.serverInfo?[.message] {
                return "\(message) (SQLSTATE \(state))"
            }
            if let underlying = psql.underlying { return "\(psql.code): \(underlying)" }
            return "\(psql.code)"
        }
        if error is PostgresLinkTimeout { return "no answer within the statement timeout" }
        return "\(error)"
    }
}

/// A statement did not answer within its deadline: the connection is treated as lost.
struct PostgresLinkTimeout: Error {}

/// A statement PostgreSQL refused (the connection stays usable): its SQLSTATE says why.
struct PostgresStatementError: Error, CustomStringConvertible {
    let underlying: any Error

    var sqlState: String? { (underlying as? PSQLError)?.serverInfo?[.sqlState] }
    var description: String { PostgresLink.describe(underlying) }
}
