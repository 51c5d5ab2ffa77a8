import CSQLite
import Testing
import TokenVaultTesting

@testable import TokenVaultStorage

/// SQLite's memory statistics take a process-wide mutex on every allocation; the event loops'
/// point reads contended on it. Every connection is opened through `SQLiteConnection`, which
/// turns the statistics off before SQLite initialises, so the counter never moves.
@Suite struct SQLiteConfigurationTests {
    @Test func memoryStatisticsAreOff() throws {
        let directory = TemporaryDirectory()
        let connection = try SQLiteConnection(path: directory.file("config.db"))
        defer { connection.close() }
        try connection.execute("CREATE TABLE t (x TEXT); INSERT INTO t VALUES (hex(randomblob(4096)))")
        #expect(try connection.scalarText("SELECT length(x) FROM t") == "8192")
        #expect(sqlite3_memory_used() == 0, "SQLite still counts its allocations (SQLITE_CONFIG_MEMSTATUS)")
        // Too late now: SQLite is initialised, and the option is refused rather than half applied.
        #expect(tokenvault_sqlite3_disable_memory_statistics() == SQLITE_MISUSE)
    }
}
