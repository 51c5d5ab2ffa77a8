import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultServer

/// Health and metrics are open to every member of the socket's group, rights or not: they must
/// not let such a caller load the database or wait on the ledger's writer.
@Suite struct HealthLoadTests {
    /// A thousand health and metrics requests while the ledger's writer is held: every one is
    /// answered, and the writer is let go only after that (it waits at most a minute). Health
    /// read the schema version on the writer connection, so each request waited for the write:
    /// the minute ran out first.
    @Test func healthAndMetricsNeverWaitForTheWriter() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let database = server.fixture.database
            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let heldTooLong = Counter()
            // The transaction waits on a thread of the store's own.
            let writer = Task {
                _ = try? await database.write(durability: .normal) { _ in
                    holding.signal()
                    if release.wait(timeout: .now() + 60) == .timedOut { heldTooLong.add() }
                }
            }
            try await offThePool { holding.wait() }
            let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var statuses: [Int] = []
                        for index in 0..<250 {
                            let target = (worker + index) % 5 == 0 ? "/metrics" : "/v1/health"
                            let response = try await server.request("GET", target)
                            if target == "/v1/health" {
                                let database = response.json()["database"] as? [String: Any]
                                #expect(database?["schema_version"] as? Int ?? 0 > 0, "\(response.text)")
                            }
                            statuses.append(response.status)
                        }
                        return statuses
                    }
                }
                return try await group.reduce(into: [Int]()) { $0 += $1 }
            }
            release.signal()
            await writer.value
            #expect(statuses.count == 1000 && statuses.allSatisfy { $0 == 200 })
            #expect(heldTooLong.value == 0, "the requests waited for the writer")
        }
    }

    /// Asked many times at once and again within the second, the database is read once.
    @Test func aRecentValueIsComputedOncePerInterval() async throws {
        let computed = Counter()
        // Long enough that a loaded machine finishes the hundred callers well inside it.
        let recent = RecentValue<Int>(maximumAge: .seconds(10))
        let compute: @Sendable () async throws -> Int = {
            try await Task.sleep(for: .milliseconds(20))
            return computed.add()
        }
        let values = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<100 { group.addTask { try await recent.get(compute) } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(Set(values) == [1] && computed.value == 1)
        #expect(try await recent.get(compute) == 1)
        // Older than its age, it is computed again (a sleep past the age holds however slow).
        let short = RecentValue<Int>(maximumAge: .milliseconds(300))
        #expect(try await short.get(compute) == 2)
        try await Task.sleep(for: .milliseconds(350))
        #expect(try await short.get(compute) == 3)
        // A failure is not kept.
        struct Refused: Error {}
        let failing = RecentValue<Int>(maximumAge: .seconds(60))
        await #expect(throws: Refused.self) { try await failing.get { throw Refused() } }
        #expect(try await failing.get { 7 } == 7)
    }
}

/// A count several threads raise.
private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    var value: Int { count.load(ordering: .acquiring) }
    @discardableResult func add() -> Int { count.add(1, ordering: .acquiringAndReleasing).newValue }
}
