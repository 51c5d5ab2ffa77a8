import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

@Suite struct RotationTests {
    static let credentialCount = 300

    func filledVault() async throws -> (TestVault, [CredentialID: String]) {
        let fixture = try TestVault()
        var expected: [CredentialID: String] = [:]
        for index in 0..<Self.credentialCount {
            let sample = SamplePayloads.oauth()
            let id = try CredentialID("rotate/c\(index)")
            expected[id] = sample.tokens[0]
            try await fixture.vault.put(id, payload: try SamplePayloads.decode(sample.json), provider: "p")
        }
        return (fixture, expected)
    }

    @Test func thousandsOfConcurrentReadsAllSucceedDuringRotation() async throws {
        let (fixture, expected) = try await filledVault()
        let ids = Array(expected.keys)
        let rotating = Atomic<Bool>(true)
        let readsDuringRotation = Atomic<Int>(0)
        let failures = Atomic<Int>(0)

        let vault = fixture.vault
        var readers: [Task<Int, Never>] = []
        for reader in 0..<3 {
            readers.append(
                Task { @Sendable in
                    var index = reader
                    var total = 0
                    // Keep reading while the rotation runs, and at least 2,000 times each.
                    while rotating.load(ordering: .acquiring) || total < 2_000 {
                        let id = ids[index % ids.count]
                        index += 7
                        total += 1
                        do {
                            if try await vault.credential(id).secrets.accessToken.revealString() != expected[id] {
                                failures.add(1, ordering: .relaxed)
                            }
                        } catch {
                            failures.add(1, ordering: .relaxed)
                        }
                        if rotating.load(ordering: .acquiring) { readsDuringRotation.add(1, ordering: .relaxed) }
                        // A read the row cache answers does not suspend: let the rotation run.
                        await Task.yield()
                    }
                    return total
                })
        }
        let rotation = KeyRotation(
            vault: fixture.vault, keyring: fixture.keyring, terms: fixture.database, batchSize: 5)
        let report = try await rotation.rotate()
        rotating.store(false, ordering: .releasing)
        let totals = await readers.asyncMap { await $0.value }

        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(totals.reduce(0, +) >= 6_000)
        // Hundreds overlap even when the parallel suite starves the readers (872 seen at worst
        // under `make test`, usually thousands); a hundred already proves they overlapped.
        #expect(readsDuringRotation.load(ordering: .relaxed) >= 100, "reads must overlap the rotation")
        #expect(report.resealed == Self.credentialCount)
        #expect(report.removedTerms == [1])
        #expect(try fixture.database.termUsage() == [2: Self.credentialCount])
        await #expect(try fixture.vault.verify().isClean)
    }

    @Test func writesDuringRotationAreNeitherLostNorLeftOnTheOldTerm() async throws {
        let (fixture, _) = try await filledVault()
        let rotating = Atomic<Bool>(true)
        let writer = Task {
            var written: [CredentialID: String] = [:]
            var index = 0
            while rotating.load(ordering: .acquiring) || index < 50 {
                let sample = SamplePayloads.tinkoff()
                let id = try! CredentialID("rotate/c\(index % RotationTests.credentialCount)")
                try! await fixture.vault.put(id, payload: try! SamplePayloads.decode(sample.json), provider: "p")
                written[id] = sample.tokens[0]
                index += 1
            }
            return written
        }
        let rotation = KeyRotation(
            vault: fixture.vault, keyring: fixture.keyring, terms: fixture.database, batchSize: 5)
        _ = try await rotation.rotate()
        rotating.store(false, ordering: .releasing)
        let written = await writer.value
        let finished = try await rotation.finish(onto: fixture.keyring.activeTerm)
        #expect(finished.remainingTerms.isEmpty)
        #expect(try fixture.database.terms().map(\.term) == [2])
        for (id, token) in written {
            await #expect(try fixture.vault.credential(id).secrets.accessToken.revealString() == token)
        }
        await #expect(try fixture.vault.verify().isClean)
    }
}

extension Thread {
    /// Runs `body` on a new OS thread (not the cooperative pool), as a blocking caller would.
    static func detachNewThreadWithResult<T: Sendable>(_ body: @escaping @Sendable () -> T) -> Task<T, Error> {
        let (stream, continuation) = AsyncStream.makeStream(of: T.self)
        Thread.detachNewThread {
            continuation.yield(body())
            continuation.finish()
        }
        return Task {
            for await value in stream { return value }
            throw CancellationError()
        }
    }
}
