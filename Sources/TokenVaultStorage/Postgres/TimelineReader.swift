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
            let name = try await link.query("SELECT \(unescaped: PostgresDatabase.walFile)").rows.first?
                .decode(String.self)
            return name.flatMap(PostgresDatabase.timeline(ofWALFile:))
        } catch is PostgresStatementError {
            refused.store(true, ordering: .relaxed)
            return nil
        }
    }
}
