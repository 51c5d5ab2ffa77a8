import Foundation
import NIOCore
import Testing
import TokenVaultCore

@testable import TokenVaultServer

/// `MetadataJSON` writes what `JSONEncoder` (sorted keys, slashes unescaped) writes for
/// `CredentialMetadataDocument` and `PageDocument`, byte for byte, over many shapes: every
/// optional present and absent, empty and full lists and labels, text that needs escaping.
@Suite struct MetadataJSONTests {
    static let texts = [
        "", "a", "pay", "T-ID", "with space", "quote\"d", "back\\slash", "new\nline\ttab", "ctrl\u{01}\u{1f}",
        "cr\r bs\u{8} ff\u{c} del\u{7f}",
        "slash/es", "кириллица", "emoji 🔑", "\u{2028}sep", "é (precomposed)", "e\u{301} (combining)",
    ]

    static func metadata(_ random: inout SystemRandomNumberGenerator, index: Int) throws -> CredentialMetadata {
        func text() -> String { texts.randomElement(using: &random)! }
        func maybe<T>(_ value: @autoclosure () -> T) -> T? { Bool.random(using: &random) ? value() : nil }
        func time() -> Timestamp { Timestamp(milliseconds: Int64.random(in: 0...4_102_444_800_000, using: &random)) }
        var labels: [String: String] = [:]
        for _ in 0..<Int.random(in: 0...4, using: &random) { labels[text()] = text() }
        return CredentialMetadata(
            id: try CredentialID(namespace: "ns\(index % 7)", name: "cred-\(index)"), provider: text(),
            kind: Bool.random(using: &random) ? .oauth2 : .verifyToken, subject: maybe(text()),
            status: CredentialStatus.allCases.randomElement(using: &random)!,
            generation: Int64.random(in: 1...Int64.max, using: &random), tokenType: maybe(text()),
            scopes: (0..<Int.random(in: 0...3, using: &random)).map { _ in text() }, labels: labels,
            issuedAt: time(), expiresAt: maybe(time()), refreshAt: maybe(time()), refreshTokenExpiresAt: maybe(time()),
            lastError: maybe(CredentialFailure(code: text(), message: text(), at: time())),
            refreshFailures: Int.random(in: 0...1000, using: &random), createdAt: time(), updatedAt: time(),
            hasRefreshToken: Bool.random(using: &random), hasIDToken: Bool.random(using: &random),
            grant: maybe(
                CredentialGrant(
                    scopes: (0..<Int.random(in: 0...3, using: &random)).map { _ in text() },
                    audiences: (0..<Int.random(in: 0...2, using: &random)).map { _ in text() },
                    resources: (0..<Int.random(in: 0...2, using: &random)).map { _ in text() },
                    subject: maybe(try! CredentialID("ns\(index % 5)/subject-\(index)")),
                    requestedTokenType: maybe(text()), subjectCreatedAt: maybe(time()))),
            pendingCommit: maybe(
                PendingCommit(
                    since: time(), failures: Int.random(in: 0...50, using: &random), lastError: text(),
                    nextAttemptAt: time())))
    }

    static func encoded(_ value: some Encodable) throws -> [UInt8] {
        Array(buffer: try VaultAPI.jsonBody(value))
    }

    /// Every text at its longest once escaped (six bytes per byte, `\u0001`): the reservation
    /// (`MetadataJSON.bound`) holds it, and nothing is written past it.
    @Test func theReservationHoldsTextThatEscapesToSixBytesPerByte() throws {
        let worst = String(repeating: "\u{01}", count: 300)
        let time = Timestamp(milliseconds: 253_402_300_799_999)
        let metadata = CredentialMetadata(
            id: try CredentialID(
                namespace: String(repeating: "n", count: 64), name: String(repeating: "m", count: 128)),
            provider: worst, kind: .oauth2, subject: worst, status: .revokePending, generation: .max, tokenType: worst,
            scopes: [worst, worst, worst], labels: [worst: worst, worst + "a": worst, "b": worst],
            issuedAt: time, expiresAt: time, refreshAt: time, refreshTokenExpiresAt: time,
            lastError: CredentialFailure(code: worst, message: worst, at: time), refreshFailures: .max,
            createdAt: time, updatedAt: time, hasRefreshToken: true, hasIDToken: true,
            grant: CredentialGrant(
                type: .tokenExchange, scopes: [worst, worst], audiences: [worst], resources: [worst, worst],
                subject: try CredentialID(
                    namespace: String(repeating: "s", count: 64), name: String(repeating: "t", count: 128)),
                requestedTokenType: worst),
            pendingCommit: PendingCommit(since: time, failures: .max, lastError: worst, nextAttemptAt: time))
        let ours = Array(buffer: MetadataJSON.document(metadata, allocator: ByteBufferAllocator()))
        #expect(ours == (try Self.encoded(CredentialMetadataDocument(metadata))))
        #expect(ours.count <= MetadataJSON.bound(metadata))
    }

    @Test func writesWhatTheEncoderWrites() throws {
        var random = SystemRandomNumberGenerator()
        var all: [CredentialMetadata] = []
        for index in 0..<500 {
            let metadata = try Self.metadata(&random, index: index)
            all.append(metadata)
            let ours = Array(buffer: MetadataJSON.document(metadata, allocator: ByteBufferAllocator()))
            let theirs = try Self.encoded(CredentialMetadataDocument(metadata))
            #expect(
                ours == theirs, "\(String(decoding: ours, as: UTF8.self)) != \(String(decoding: theirs, as: UTF8.self))"
            )
            if ours != theirs { return }
        }
        for (items, cursor) in [(Array(all.prefix(50)), "ns1/cred-49"), ([], nil), (Array(all.suffix(3)), nil)] {
            let ours = Array(buffer: MetadataJSON.page(items, nextCursor: cursor, allocator: ByteBufferAllocator()))
            let theirs = try Self.encoded(
                PageDocument(items: items.map(CredentialMetadataDocument.init), nextCursor: cursor))
            #expect(ours == theirs)
        }
    }
}
