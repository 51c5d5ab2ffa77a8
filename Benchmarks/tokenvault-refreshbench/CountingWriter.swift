import TokenVaultCore
import TokenVaultTesting

/// Forwards every call to the transaction's writer and counts savepoints: the engine's group
/// commit runs each coalesced write in its own savepoint, so this is the batch size.
final class CountingWriter: ForwardingWriter {
    private(set) var savepoints = 0

    override func savepoint<Result>(_ body: () async throws -> Result) async throws -> Result {
        savepoints += 1
        return try await base.savepoint(body)
    }
}
