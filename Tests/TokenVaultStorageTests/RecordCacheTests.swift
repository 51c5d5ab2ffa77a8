import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultStorage

/// The cache of sealed rows on its own: its bounds, its order of eviction, and its tickets.
@Suite struct RecordCacheTests {
    static func record(_ name: String, tokenBytes: Int = 100, generation: Int64 = 1) throws -> SealedCredentialRecord {
        let now = Timestamp(milliseconds: 1_000)
        return SealedCredentialRecord(
            metadata: CredentialMetadata(
                id: try CredentialID("cache/\(name)"), provider: "p", kind: .oauth2, generation: generation,
                issuedAt: now, createdAt: now, updatedAt: now, hasRefreshToken: true, hasIDToken: false),
            sealTerm: 1, accessToken: [UInt8](repeating: 1, count: tokenBytes),
            refreshToken: [UInt8](repeating: 2, count: tokenBytes), idToken: nil, extras: nil)
    }

    @Test func aRowReadBeforeAnInvalidationIsNotKept() throws {
        let cache = RecordCache(capacity: 10)
        let old = try Self.record("a")
        let ticket = cache.ticket(for: old.metadata.id)
        cache.invalidate(old.metadata.id)  // a write committed while the row was being read
        cache.insert(old, ticket: ticket)
        #expect(cache.record(old.metadata.id) == nil)
        cache.insert(old, ticket: cache.ticket(for: old.metadata.id))
        #expect(cache.record(old.metadata.id) == old)
        let other = cache.ticket(for: old.metadata.id)
        cache.invalidateAll()
        cache.insert(old, ticket: other)
        #expect(cache.statistics.entries == 0)
    }

    /// What a kept page of the listing is checked against: every change begun, ended or heard
    /// moves the count, and there is none while a write is under way (its commit may land).
    @Test func theChangeCountMovesWithEveryChangeAndIsAbsentDuringAWrite() throws {
        let cache = RecordCache(capacity: 10)
        let id = try Self.record("a").metadata.id
        var seen: [UInt64] = []
        func counted() throws {
            let count = try #require(cache.changeCount())
            #expect(!seen.contains(count), "\(seen) then \(count)")
            seen.append(count)
        }
        try counted()
        cache.insert(try Self.record("a"), ticket: cache.ticket(for: id))
        #expect(cache.record(id) != nil)
        #expect(cache.changeCount() == seen.last, "a read, a miss and a row kept move nothing")
        cache.beginWrite(id)
        #expect(cache.changeCount() == nil)
        cache.endWrites([id])
        try counted()
        cache.invalidate(try CredentialID("cache/never-cached"))  // another node's change, heard
        try counted()
        cache.endWrites([id], uncertain: true)  // a commit whose outcome is unknown...
        try counted()
        cache.heardOwnChange(id)  // ...heard landing after all
        try counted()
        cache.invalidateAll()
        try counted()
        #expect(RecordCache(capacity: 10, bytes: 0).changeCount() == nil, "no cache, nothing to tell by")
    }

    @Test func aRowBeingWrittenIsNeitherServedNorKept() throws {
        let cache = RecordCache(capacity: 10)
        let row = try Self.record("a")
        cache.insert(row, ticket: cache.ticket(for: row.metadata.id))
        cache.beginWrite(row.metadata.id)
        #expect(cache.record(row.metadata.id) == nil, "the row from before the write is not served")
        cache.insert(row, ticket: cache.ticket(for: row.metadata.id))
        #expect(cache.record(row.metadata.id) == nil, "nor kept while the write is in flight")
        let before = cache.ticket(for: row.metadata.id)
        cache.endWrites([row.metadata.id])
        cache.insert(row, ticket: before)
        #expect(cache.record(row.metadata.id) == nil, "a row read during the write is not kept after it")
        cache.insert(row, ticket: cache.ticket(for: row.metadata.id))
        #expect(cache.record(row.metadata.id) == row)
    }

    /// A row a transaction wrote whole is kept as written when it commits, unless anything
    /// invalidated its shard since its write began (another node's later change, heard between
    /// the commit and the end), the row was changed again after the save, a write of the
    /// transaction threw, or another transaction of this process is writing the row.
    @Test func aRowWrittenWholeIsKeptOnlyAsTheLastCommitLeftIt() throws {
        let cache = RecordCache(capacity: 10)
        let id = try Self.record("a").metadata.id
        func transaction(_ generation: Int64, _ steps: (inout RecordCache.Writes) -> Void = { _ in }) throws
            -> RecordCache.Writes
        {
            var writes = RecordCache.Writes()
            writes.touch(id, in: cache)
            writes.saved(try Self.record("a", generation: generation))
            steps(&writes)
            return writes
        }
        cache.end(try transaction(2), committed: true)
        #expect(cache.record(id)?.metadata.generation == 2)

        let heardBetween = try transaction(3)
        cache.invalidate(id)  // another node's change of the row, committed after this one
        cache.end(heardBetween, committed: true)
        #expect(cache.record(id) == nil)

        cache.end(try transaction(4), committed: false)
        #expect(cache.record(id) == nil, "a commit that failed, or whose outcome is unknown")
        cache.end(try transaction(5) { $0.aWriteThrew = true }, committed: true)
        #expect(cache.record(id) == nil)
        cache.end(try transaction(6) { $0.touch(id, in: cache) }, committed: true)
        #expect(cache.record(id) == nil, "changed after the save: the saved row is not the database's")

        let first = try transaction(7)
        let second = try transaction(8)
        cache.end(first, committed: true)
        #expect(cache.record(id) == nil, "another transaction is writing it")
        cache.end(second, committed: true)
        #expect(cache.record(id) == nil, "the first one's end invalidated the second's ticket")
        cache.end(try transaction(9), committed: true)
        #expect(cache.record(id)?.metadata.generation == 9)
    }

    @Test func theByteBoundDropsTheLeastRecentlyUsedRows() throws {
        // Names of one length: every row counts the same bytes.
        func name(_ index: Int) -> String { index < 10 ? "0\(index)" : "\(index)" }
        let one = try Self.record("00").approximateBytes
        let cache = RecordCache(capacity: .max, bytes: one * 20)
        for index in 0..<20 {
            let row = try Self.record(name(index))
            cache.insert(row, ticket: cache.ticket(for: row.metadata.id))
        }
        #expect(cache.statistics.entries == 20 && cache.statistics.bytes == one * 20)
        // Row 0 is used again; rows 1... are older now.
        #expect(cache.record(try CredentialID("cache/00")) != nil)
        let next = try Self.record("20")
        cache.insert(next, ticket: cache.ticket(for: next.metadata.id))
        let statistics = cache.statistics
        #expect(statistics.bytes <= one * 18 && statistics.entries == statistics.bytes / one)
        #expect(cache.record(try CredentialID("cache/00")) != nil, "the recently used row stays")
        #expect(cache.record(next.metadata.id) != nil)
        #expect(cache.record(try CredentialID("cache/01")) == nil, "the least recently used row went first")
    }

    @Test func replacingARowCountsItsBytesOnce() throws {
        let cache = RecordCache(capacity: .max)
        let small = try Self.record("a", tokenBytes: 10)
        let large = try Self.record("a", tokenBytes: 1_000, generation: 2)
        cache.insert(small, ticket: cache.ticket(for: small.metadata.id))
        cache.insert(large, ticket: cache.ticket(for: large.metadata.id))
        #expect(cache.statistics.bytes == large.approximateBytes)
        cache.invalidate(large.metadata.id)
        #expect(cache.statistics.bytes == 0 && cache.statistics.entries == 0)
    }

    @Test func theRowBoundStillHolds() throws {
        let cache = RecordCache(capacity: 10)
        for index in 0..<25 {
            let row = try Self.record("\(index)")
            cache.insert(row, ticket: cache.ticket(for: row.metadata.id))
        }
        #expect(cache.statistics.entries <= 10)
        #expect(cache.record(try CredentialID("cache/24")) != nil)
    }

    @Test func aRowLargerThanTheBoundIsNotKept() throws {
        let cache = RecordCache(capacity: .max, bytes: 0)
        let row = try Self.record("a")
        cache.insert(row, ticket: cache.ticket(for: row.metadata.id))
        #expect(cache.record(row.metadata.id) == nil && cache.statistics.bytes == 0)
    }

    /// Where the cache is only for speed, a row read once is not kept: a sweep over every
    /// credential leaves the cache as it found it, and a row is kept from its second read on.
    @Test func aRowIsKeptFromItsSecondReadWhenRowsReadOnceAreNot() throws {
        let cache = RecordCache(capacity: .max, bytes: 16 << 20, keepsRowsReadOnce: false)
        let hot = try Self.record("hot")
        cache.insert(hot, ticket: cache.ticket(for: hot.metadata.id))
        #expect(cache.record(hot.metadata.id) == nil, "read once: not kept")
        cache.insert(hot, ticket: cache.ticket(for: hot.metadata.id))
        #expect(cache.record(hot.metadata.id) == hot, "read again: kept")

        // A row written whole that was not cached is kept only if a read wanted it before: a
        // write alone (an import) is not a want.
        let new = try Self.record("new")
        func put(_ row: SealedCredentialRecord) {
            var writes = RecordCache.Writes()
            writes.touch(row.metadata.id, in: cache)
            writes.saved(row)
            cache.end(writes, committed: true)
        }
        put(new)
        #expect(cache.record(new.metadata.id) == nil, "a first write is not kept")
        cache.insert(new, ticket: cache.ticket(for: new.metadata.id))
        #expect(cache.record(new.metadata.id) == nil, "nor is the first read after it")
        let newer = try Self.record("new", generation: 2)
        put(newer)
        #expect(cache.record(new.metadata.id) == newer, "a write after a read is kept")

        // A sweep of 20,000 rows read once each keeps only the doorkeeper's false positives
        // (at most 1 in 64, fewer while its set is emptier), and the row read again stays.
        let before = cache.statistics.entries
        for index in 0..<20_000 {
            let row = try Self.record("sweep\(index)", tokenBytes: 10)
            cache.insert(row, ticket: cache.ticket(for: row.metadata.id))
        }
        let kept = cache.statistics.entries - before
        #expect(kept < 20_000 / 64, "kept \(kept) rows of a sweep of 20,000")
        #expect(cache.record(hot.metadata.id) == hot)
    }

    /// A row cached when its write begins is wanted, even if the doorkeeper has forgotten it
    /// since it was read: the row the write leaves is kept.
    @Test func aCachedRowWrittenWholeIsKeptAfterTheDoorkeeperForgot() throws {
        // 1 MiB: about 1,000 rows, a set of 32 Ki bits, cleared at 4,096 set: about 2,200 ids.
        let cache = RecordCache(capacity: .max, bytes: 1 << 20, keepsRowsReadOnce: false)
        let hot = try Self.record("hot")
        for _ in 0..<2 { cache.insert(hot, ticket: cache.ticket(for: hot.metadata.id)) }
        for index in 0..<3_000 {
            let row = try Self.record("other\(index)", tokenBytes: 10)
            cache.insert(row, ticket: cache.ticket(for: row.metadata.id))
        }
        #expect(cache.record(hot.metadata.id) == hot, "still cached, its mark cleared")
        var writes = RecordCache.Writes()
        writes.touch(hot.metadata.id, in: cache)
        let written = try Self.record("hot", generation: 2)
        writes.saved(written)
        cache.end(writes, committed: true)
        #expect(cache.record(hot.metadata.id) == written)
    }

    /// The doorkeeper forgets once an eighth of its bits are set: a row must be wanted again
    /// within so many first reads of other rows.
    @Test func theDoorkeeperForgetsOnceAnEighthOfItsBitsAreSet() throws {
        typealias Doorkeeper = RecordCache.Doorkeeper
        var doorkeeper = Doorkeeper(rows: 1)  // 4,096 bits: cleared once 512 are set
        let first = Doorkeeper.hash(try CredentialID("cache/first"))
        let firstRead = doorkeeper.seenBefore(first)
        let secondRead = doorkeeper.seenBefore(first)
        #expect(!firstRead && secondRead)
        // Two bits per id, fewer where one was set already: 255 more ids at least, about 273,
        // set 512, and the next clears the set before marking itself.
        var others = 0
        while doorkeeper.contains(first) && others < 1_000 {
            _ = doorkeeper.seenBefore(Doorkeeper.hash(try CredentialID("cache/other\(others)")))
            others += 1
        }
        #expect((256...330).contains(others), "forgotten after \(others) other ids")
        let afterReset = doorkeeper.seenBefore(first)
        let again = doorkeeper.seenBefore(first)
        #expect(!afterReset && again)
    }

    /// A change of this process's own, heard on PostgreSQL's change feed, drops nothing after a
    /// transaction that knew it committed; after one that did not (its COMMIT's outcome unknown),
    /// it drops the row read since, whatever it holds, and reads begun before: every own change
    /// of the row heard within `uncertainFor` does (an earlier change, late or replayed, may be
    /// heard before the uncertain one).
    @Test func anOwnChangeDropsTheRowOnlyAfterACommitWhoseOutcomeWasUnknown() throws {
        let cache = RecordCache(capacity: 10)
        let first = try Self.record("a")
        let id = first.metadata.id
        func read(_ row: SealedCredentialRecord) { cache.insert(row, ticket: cache.ticket(for: id)) }
        func transaction(committed: Bool) {
            var writes = RecordCache.Writes()
            writes.touch(id, in: cache)
            cache.end(writes, committed: committed)
        }
        transaction(committed: true)
        read(first)
        cache.heardOwnChange(id)
        #expect(cache.record(id) == first, "a known commit: nothing new")

        transaction(committed: false)
        read(first)  // the row from before the commit, which lands now
        let begun = cache.ticket(for: id)
        cache.heardOwnChange(id)
        #expect(cache.record(id) == nil, "the commit landed after the read: dropped")
        cache.insert(first, ticket: begun)
        #expect(cache.record(id) == nil, "and a read begun before it is not kept")
        let second = try Self.record("a", generation: 2)
        read(second)
        cache.heardOwnChange(id)
        #expect(cache.record(id) == nil, "the next own change within the minute drops it too")
        transaction(committed: true)
        read(second)
        cache.heardOwnChange(id)
        #expect(cache.record(id) == nil, "a known commit does not end the minute")
    }

    /// A row read under its lock and not changed is still served while the transaction runs,
    /// and dropped when it ends (another node's change of it may not have been heard yet).
    @Test func aRowReadUnderItsLockIsDroppedWhenTheTransactionEnds() throws {
        let cache = RecordCache(capacity: 10)
        let row = try Self.record("a")
        let id = row.metadata.id
        cache.insert(row, ticket: cache.ticket(for: id))
        var writes = RecordCache.Writes()
        writes.lockedRead(id)
        #expect(cache.record(id) == row)
        let begun = cache.ticket(for: id)
        cache.end(writes, committed: true)
        #expect(cache.record(id) == nil)
        cache.insert(row, ticket: begun)
        #expect(cache.record(id) == nil, "a read begun before the end is not kept")
        cache.heardOwnChange(id)
        cache.insert(row, ticket: cache.ticket(for: id))
        #expect(cache.record(id) == row)
    }
}
