import PostgresNIO
import Synchronization
import TokenVaultCore

/// Reads the server's timeline (`HeartbeatReading.timeline`): the first eight hex digits of the
/// name of the WAL file being written, which a promotion changes. Some managed servers refuse
/// the WAL functions; there the first refusal turns the reading off for the process (no timeline,
/// so no failover detection: `FailoverGuard` never holds), instead of failing every heartbeat.
final class TimelineReader: Sendable {
    private let refused = Atomic<Bool>(false)

    /// False once the server refused the reading.
    var isSupported: Bool { !refused.load(ordering: .relaxed) }

    /// The timeline, or nil where the server refuses to tell. A lost connection is thrown.
    func read(on link: PostgresLink) async throws -> Int64? {
        guard isSupported else { return nil }
        do {
            return try Self.timeline(in: try await link.query(Self.query))
        } catch is PostgresStatementError {
            refused.store(true, ordering: .relaxed)
            return nil
        }
    }

    /// The same inside a transaction, only while the reading is on: a refused statement would
    /// abort the transaction, so a refusal is learned by the heartbeat's reading, never here.
    func read(in writer: PostgresCredentialWriter) async throws -> Int64? {
        guard isSupported else { return nil }
        return try Self.timeline(in: try await writer.run(Self.query))
    }

    /// The name of the WAL file being written: its first eight hex digits are the server's
    /// timeline (PostgreSQL has no plainer way for a role without `pg_monitor` to read it).
    private static let query: PostgresQuery = "SELECT pg_walfile_name(pg_current_wal_lsn())"

    private static func timeline(in result: PostgresQueryResult) throws -> Int64? {
        try result.rows.first.flatMap { timeline(ofWALFile: try $0.decode(String.self)) }
    }

    /// The timeline in a WAL file name, or nil if it is not one.
    static func timeline(ofWALFile name: String) -> Int64? {
        guard name.utf8.count == 24 else { return nil }
        return Int64(name.prefix(8), radix: 16)
    }
}
