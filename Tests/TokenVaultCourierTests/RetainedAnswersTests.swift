import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultCourier

/// The commits a node keeps on its disk for a failover: read back exactly, newest per
/// credential, a torn last entry ignored, pruned by age, and the reconciled timeline kept.
@Suite struct RetainedAnswersTests {
    let directory = TemporaryDirectory("tokenvault-retained")
    let clock = FakeClock()

    static func record(
        _ name: String, generation: Int64, createdAt: Int64 = 1, grant: CredentialGrant? = nil
    ) throws -> SealedCredentialRecord {
        SealedCredentialRecord(
            metadata: CredentialMetadata(
                id: try CredentialID(name), provider: "idp", kind: .oauth2, subject: "sub", generation: generation,
                tokenType: "Bearer", scopes: ["a", "b"], labels: ["team": "pay", "env": "prod"],
                issuedAt: Timestamp(milliseconds: 10), expiresAt: Timestamp(milliseconds: 20),
                refreshAt: Timestamp(milliseconds: 15), refreshTokenExpiresAt: nil,
                lastError: CredentialFailure(code: "c", message: "m", at: Timestamp(milliseconds: 12)),
                refreshFailures: 2, createdAt: Timestamp(milliseconds: createdAt),
                updatedAt: Timestamp(milliseconds: 14), hasRefreshToken: true, hasIDToken: false, grant: grant),
            sealTerm: 3, accessToken: [1, 2, 3, UInt8(generation)], refreshToken: [4, 5], idToken: nil, extras: [6])
    }

    @Test func keepsTheNewestRowOfEachCredentialExactly() throws {
        let kept = RetainedAnswers(directory: directory.file("retained"), retention: 60, clock: clock)
        kept.retain(try Self.record("idp/a", generation: 1))
        kept.retain(try Self.record("idp/a", generation: 3))
        clock.advance(seconds: 20)  // a new segment
        kept.retain(try Self.record("idp/b", generation: 7))
        kept.retain(try Self.record("idp/a", generation: 2))  // older than one kept
        #expect(
            try kept.retained() == [try Self.record("idp/a", generation: 3), try Self.record("idp/b", generation: 7)])
        // A credential deleted and stored again starts over: its newer row wins.
        kept.retain(try Self.record("idp/b", generation: 1, createdAt: 5))
        #expect(try kept.retained().last == (try Self.record("idp/b", generation: 1, createdAt: 5)))
        #expect(kept.failedAppends == 0)
    }

    /// A credential obtained by a grant is written back with it; an entry written before grants
    /// were kept (it ends after the envelopes) reads as one without.
    @Test func theGrantIsKeptAndOlderEntriesReadWithout() throws {
        let grant = CredentialGrant(scopes: ["s"], audiences: ["https://api.example"], resources: ["urn:r"])
        let withGrant = try Self.record("idp/machine", generation: 4, grant: grant)
        var writer = WireWriter()
        RetainedAnswers.write(withGrant, to: &writer)
        var reader = WireReader(writer.bytes)
        #expect(try RetainedAnswers.read(from: &reader) == withGrant)

        let without = try Self.record("idp/person", generation: 2)
        var older = WireWriter()
        RetainedAnswers.write(without, to: &older)
        var bytes = older.bytes
        bytes.removeLast()  // the absent grant's marker, which older entries do not have
        var olderReader = WireReader(bytes)
        #expect(try RetainedAnswers.read(from: &olderReader) == without)
    }

    @Test func aTornLastEntryIsIgnored() throws {
        let path = directory.file("retained")
        let kept = RetainedAnswers(directory: path, retention: 60, clock: clock)
        kept.retain(try Self.record("idp/a", generation: 1))
        let file = try #require(
            try FileManager.default.contentsOfDirectory(atPath: path).first { $0.hasSuffix(".log") })
        let handle = try #require(FileHandle(forWritingAtPath: path + "/" + file))
        handle.seekToEndOfFile()
        handle.write(Data([0, 0, 1, 0, 9, 9]))  // says 256 bytes follow; 2 do
        try handle.close()
        #expect(try kept.retained() == [try Self.record("idp/a", generation: 1)])
    }

    @Test func pruneForgetsSegmentsPastTheRetentionPeriod() throws {
        let path = directory.file("retained")
        let kept = RetainedAnswers(directory: path, retention: 60, clock: clock)
        kept.retain(try Self.record("idp/old", generation: 1))
        clock.advance(seconds: 30)
        kept.retain(try Self.record("idp/new", generation: 1))
        clock.advance(seconds: 40)
        kept.prune()
        // Nothing in the first segment is younger than the second's start, 40 s ago: kept.
        #expect(try kept.retained().count == 2)
        clock.advance(seconds: 30)
        kept.prune()
        // That start is 70 s ago now. (The last segment's end is its file's time, on the disk's
        // clock, later than this test's.)
        #expect(try kept.retained().map(\.metadata.id.description) == ["idp/new"])
        kept.retain(try Self.record("idp/newest", generation: 1))
        #expect(try kept.retained().count == 2)
    }

    @Test func theReconciledTimelineOutlivesTheProcess() throws {
        let path = directory.file("retained")
        #expect(RetainedAnswers(directory: path, retention: 60).reconciledTimeline == nil)
        try RetainedAnswers(directory: path, retention: 60).markReconciled(3)
        #expect(RetainedAnswers(directory: path, retention: 60).reconciledTimeline == 3)
        let modes = try FileManager.default.attributesOfItem(atPath: path + "/reconciled")[.posixPermissions] as? Int
        #expect(modes.map { $0 & 0o077 } == 0)
    }
}
