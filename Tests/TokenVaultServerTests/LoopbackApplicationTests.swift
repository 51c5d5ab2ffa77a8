import Hummingbird
import Testing
import TokenVaultTesting

/// The tests' loopback servers fail at once on a port that is taken, rather than waiting for a
/// listen that never comes (a test that restarts its endpoint on the same port would hang).
@Suite struct LoopbackApplicationTests {
    @Test(.timeLimit(.minutes(1))) func aTakenPortFailsTheStartInsteadOfHanging() async throws {
        let first = try await LoopbackApplication.start(Router(), label: "first")
        await #expect(throws: (any Error).self) {
            _ = try await LoopbackApplication.start(Router(), port: first.port, label: "second")
        }
        await first.stop()
    }
}
