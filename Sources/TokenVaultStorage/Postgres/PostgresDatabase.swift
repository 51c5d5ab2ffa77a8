import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization
import TokenVaultCore

/// The vault on PostgreSQL, shared by any number of daemons: the same tables and the
/// same storage protocols as `SQLiteDatabase`, so the ledger, the engine and the API are unchanged.
///
/// - A few writer connections take the ledger's write transactions side by side, so commits
///   waiting for their flush overlap; a transaction carries a group of writes whose credentials
///   are locked and read together and whose changes are sent together
///   (`PostgresCredentialWriter+Group.swift`); a few reader connections serve reads. Every statement
///   is awaited with a deadline (`PostgresLink`); no thread waits for the database, except a
///   caller of the synchronous surface (migrations, key terms, settings: `waiting`).
/// - Read-modify-write of one credential is serialised across nodes by a transaction-level
///   advisory lock on its id (`record` inside a transaction takes it); one open refresh attempt per
///   credential is the unique index's to enforce, and a second node's attempt reads as a lease
///   held elsewhere.
/// - Token reads are served from `RecordCache`; every committed change reaches every node at once
///   (`PostgresChangeListener`), which drops the row from its cache, wakes its scheduler and feeds
///   its `watch` and `events` streams.
public final class PostgresDatabase: Sendable {
    public struct Configuration: Sendable {
        public enum Endpoint: Sendable, Equatable {
            case tcp(host: String, port: Int)
            /// The socket file (`<directory>/.s.PGSQL.<port>`).
            case socket(path: String)
        }

        public enum TLS: Sendable, Equatable {
            case disable
            /// Encrypted, the server's certificate not checked (libpq `sslmode=require`).
            case require
            /// Encrypted, the certificate checked against `caFile` and the host name
            /// (`sslmode=verify-full`).
            case verifyFull(caFile: String)
        }

        public var endpoint: Endpoint
        public var username: String
        public var password: String?
        public var database: String?
        public var tls: TLS
        /// Reader connections.
        public var readers = 4
        /// Writer connections: the ledger's transactions in flight at once.
        public var writers = 4
        /// How long one statement may take before its connection is given up as lost.
        public var statementTimeoutSeconds = 30.0
        /// Sealed rows kept for token reads.
        public var cacheCapacity = 100_000
        /// Bytes those rows may hold (none by default: the row count bounds them).
        public var cacheBytes = Int.max

        public init(endpoint: Endpoint, username: String, password: String?, database: String?, tls: TLS) {
            self.endpoint = endpoint
            self.username = username
            self.password = password
            self.database = database
            self.tls = tls
        }
    }

    /// A change to a credential made anywhere, as the change trigger recorded it.
    public struct Change: Sendable, Equatable {
        public enum Operation: String, Sendable {
            case insert, update, delete
            /// A device sign-in ended (`removeDevicePoll(key:ended:)`): no row changed.
            case signInEnded = "sign_in_ended"
        }
        public var sequence: Int64
        public var operation: Operation
        public var id: CredentialID
        public var oldGeneration: Int64?
        public var newGeneration: Int64?
        public var oldStatus: CredentialStatus?
        public var newStatus: CredentialStatus?
        /// The update recorded a failure (a new `last_error`).
        public var failed: Bool
        /// Made by this process (its writer's node name).
        public var isOwn: Bool
        /// How the sign-in of a `signInEnded` change ended.
        public var signInEnd: SignInEnd? = nil
    }

    /// `postgres://user@host:port/database` (never the password).
    public let location: String
    let migrator: Migrator
    /// This process's name in the change table (`tokenvault.node`).
    public let node: String
    let clock: any VaultClock
    let logger: Logger
    /// The schema's, the key terms' and the settings' one connection (so a session-level
    /// advisory lock taken on it is released on it), lent to one caller at a time.
    let administration: PostgresLinkPool
    let writers: PostgresLinkPool
    let readers: PostgresLinkPool
    /// The node's heartbeats only (`PostgresDatabase+Nodes`): a beat never queues behind reads
    /// waiting for a connection.
    let heartbeats: PostgresLinkPool
    /// Reads the server's timeline, where the server allows it.
    let timelines = TimelineReader()
    /// The server's replication as the last heartbeat read it (`StorageStatus.replication`).
    let replicationSeen = Mutex<ReplicationStatus?>(nil)
    public var replication: ReplicationStatus? { replicationSeen.withLock { $0 } }
    let cache: RecordCache
    let connectionConfiguration: PostgresConnection.Configuration
    /// Told about every change (the wiring publishes it and wakes the scheduler).
    let changeHandler = Mutex<ChangeHandler?>(nil)
    let listenerState = Mutex(ListenerState())
    /// True while the change listener is connected: only then can a cached row be trusted (a
    /// change made elsewhere would not reach it otherwise), so only then is the cache used.
    let cacheTrusted = Atomic<Bool>(false)

    struct ListenerState {
        var connected = false
        var lastSequence: Int64 = 0
        /// No replay starts below it (`markReplayFloor`).
        var replayFloor: Int64 = 0
        var hasReplayFloor = false
        var reconnects = 0
        /// Sequence numbers already delivered (a replay may repeat some).
        var delivered: Set<Int64> = []
    }

    /// Connects (failing at once with PostgreSQL's own reason) and checks nothing else: call
    /// `pendingMigrations()` or `migrate()` next. `checksum` is SHA-256 in hex, as for SQLite.
    public init(
        configuration: Configuration, checksum: @escaping @Sendable ([UInt8]) -> String,
        clock: any VaultClock = SystemClock(), logger: Logger
    ) throws {
        migrator = try Migrator(migrations: try EmbeddedMigrations.postgres(), checksum: checksum)
        var connection: PostgresConnection.Configuration
        switch configuration.endpoint {
        case .tcp(let host, let port):
            connection = .init(
                host: host, port: port, username: configuration.username, password: configuration.password,
                database: configuration.database, tls: try Self.tls(configuration.tls))
        case .socket(let path):
            connection = .init(
                unixSocketPath: path, username: configuration.username, password: configuration.password,
                database: configuration.database)
        }
        connection.options.connectTimeout = .seconds(10)
        connection.options.additionalStartupParameters = [("application_name", "tokenvault")]
        connectionConfiguration = connection
        let node = "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(UUID().uuidString.prefix(8))"
        self.node = node
        self.clock = clock
        self.logger = logger
        let timeout = TimeAmount.milliseconds(Int64(configuration.statementTimeoutSeconds * 1000))
        let session = Self.sessionSettings(statementTimeoutSeconds: configuration.statementTimeoutSeconds)
        writers = PostgresLinkPool(
            (0..<max(1, configuration.writers)).map {
                PostgresLink(
                    configuration: connection, name: "writer \($0)",
                    setup: session + ["SET tokenvault.node = '\(node.replacingOccurrences(of: "'", with: "''"))'"],
                    statementTimeout: timeout, logger: logger)
            })
        administration = PostgresLinkPool([
            PostgresLink(
                configuration: connection, name: "administration", setup: session, statementTimeout: timeout,
                logger: logger)
        ])
        readers = PostgresLinkPool(
            (0..<max(1, configuration.readers)).map {
                PostgresLink(
                    configuration: connection, name: "reader \($0)", setup: session, statementTimeout: timeout,
                    logger: logger)
            })
        heartbeats = PostgresLinkPool([
            PostgresLink(
                configuration: connection, name: "heartbeat", setup: session, statementTimeout: timeout, logger: logger)
        ])
        cache = RecordCache(capacity: configuration.cacheCapacity, bytes: configuration.cacheBytes)
        let database = configuration.database ?? configuration.username
        switch configuration.endpoint {
        case .tcp(let host, let port): location = "postgres://\(configuration.username)@\(host):\(port)/\(database)"
        case .socket(let path): location = "postgres://\(configuration.username)@\(path)/\(database)"
        }
        // Fail now, with PostgreSQL's own reason, rather than on the first request.
        _ = try administering { try await $0.query("SELECT 1") }
    }

    /// What every connection sets first, so that one node cannot stall the others: a
    /// transaction left idle by a node that froze or died inside it is ended by the server after
    /// 10 s (its row and advisory locks with it), a statement the client gave up on is cancelled
    /// by the server too, and the server's keepalives find a client host that went away within
    /// about 25 s instead of the kernel's two hours.
    /// One statement (one round trip on every new connection).
    static func sessionSettings(statementTimeoutSeconds: Double) -> [String] {
        [
            """
            SELECT set_config('idle_in_transaction_session_timeout', '10s', false),
                   set_config('statement_timeout', '\(Int(statementTimeoutSeconds * 1000))ms', false),
                   set_config('tcp_keepalives_idle', '10', false), set_config('tcp_keepalives_interval', '5', false),
                   set_config('tcp_keepalives_count', '3', false)
            """
        ]
    }

    /// Closes every connection (the listener stops with its task).
    public func close() {
        administration.close()
        writers.close()
        readers.close()
        heartbeats.close()
    }

    /// Called for every change to a credential row, this process's own included.
    public func onChange(_ handler: @escaping @Sendable (Change) -> Void) {
        changeHandler.withLock { $0 = ChangeHandler(call: handler) }
    }

    /// The handler in a struct: a closure kept in a `Mutex` as it is gets wrapped in two more
    /// reabstraction thunks at every `withLock` (the inout access writes it back), so the n-th
    /// change ran through 2n of them (a third of a loaded node's CPU within a minute, and a
    /// stack overflow in the end). A struct's field keeps its own abstraction.
    struct ChangeHandler: Sendable {
        let call: @Sendable (Change) -> Void
    }

    /// Runs `body` on a reader connection (waiting for a free one).
    func withReader<Result>(_ body: (PostgresLink) async throws -> Result) async throws -> Result {
        try await readers.withConnection(body)
    }

    /// Runs `body` for the synchronous surface (migrations, key terms, settings, copies of the
    /// tables) and blocks this thread until it has finished. The body runs as a task on an event
    /// loop (`EventLoopTaskExecutor`), never on the concurrency pool, so it finishes even when
    /// the caller blocks one of the pool's threads. Never call it on an event loop.
    func waiting<Result: Sendable>(_ body: @escaping @Sendable () async throws -> Result) throws -> Result {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let finished = loop.makePromise(of: Result.self)
        Task(executorPreference: EventLoopTaskExecutor(loop)) {
            do {
                finished.succeed(try await body())
            } catch {
                finished.fail(error)
            }
        }
        return try finished.futureResult.wait()
    }

    /// `waiting` with the administration link: every call of the synchronous surface, reads too.
    /// A reader would not do: its holders are tasks that resume on the concurrency pool, which a
    /// caller blocked on one of the pool's threads (key rotation's steps) may be starving.
    func administering<Result: Sendable>(_ body: @escaping @Sendable (PostgresLink) async throws -> Result) throws
        -> Result
    {
        try waiting { [administration] in try await administration.withConnection(body) }
    }

    private static func tls(_ tls: Configuration.TLS) throws -> PostgresConnection.Configuration.TLS {
        switch tls {
        case .disable: return .disable
        case .require:
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.certificateVerification = .none
            return .require(try NIOSSLContext(configuration: configuration))
        case .verifyFull(let caFile):
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .file(caFile)
            configuration.certificateVerification = .fullVerification
            do {
                return .require(try NIOSSLContext(configuration: configuration))
            } catch {
                throw VaultError.storageUnavailable("the PostgreSQL CA file \(caFile) cannot be used: \(error)")
            }
        }
    }
}

extension PostgresDatabase {
    /// The database's clock in milliseconds since 1970: every statement that stamps or compares a
    /// time reads this one, never a node's clock (nodes' clocks may disagree).
    static let clockMilliseconds = "(extract(epoch FROM clock_timestamp()) * 1000)::BIGINT"
}
