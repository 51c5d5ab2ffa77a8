/// The raw side of benchmarks 2 and 3: a `RawSQLiteTable` in its own database file holding
/// as many envelopes as the vault holds credentials, under ids of the same shape, and the
/// `RawAEAD` that sealed them (so "raw read + raw open" can open what it reads).
final class RawFixture {
    let table: RawSQLiteTable
    let aead: RawAEAD
    let ids: [[CChar]]

    init(path: String, count: Int, associatedData: [UInt8]) throws {
        table = try RawSQLiteTable(path: path)
        aead = RawAEAD(messageSize: BenchmarkOptions.secretSize, associatedData: associatedData)
        ids = (0..<count).map { index in cString("bench/credential-\(index)") }
    }

    /// Inserts one fresh envelope per id in a single transaction, then checkpoints the WAL.
    func fill() throws {
        try table.fill(ids: ids) { _ in aead.envelope() }
    }

    /// Reads and opens row `index` once (a missing row throws, a bad envelope traps): the
    /// benchmark must time successful reads.
    func check(_ index: Int) throws {
        _ = try table.withValue(ids[index]) { aead.open(envelope: $0) }
    }
}
