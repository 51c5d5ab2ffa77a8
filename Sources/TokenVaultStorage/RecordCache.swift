import Synchronization
import TokenVaultCore

/// The sealed rows token reads are served from without a database read: on SQLite, rows this
/// process read (it is the file's only writer, so its own writes are every change); on
/// PostgreSQL, rows this node read, dropped as every node's changes reach it. Rows stay sealed:
/// a read opens what it needs and keeps nothing opened.
///
/// Bounded twice, by rows and by bytes (least recently used rows go first), and never holding a
/// row older than a change it was told about. A row read from the database is only cached if
/// nothing invalidated its id while it was being read (each of 256 shards counts its
/// invalidations): a change committed during the read would otherwise be overwritten by the
/// older row for good. A row this process is writing is neither served nor kept until its
/// transaction has ended (`beginWrite`, `endWrites`), so the moment between a commit and the
/// invalidation that follows it never serves the row from before the commit. A row the
/// transaction wrote whole and committed may be kept as written (`WrittenRow`), on the same
/// condition as a row read: nothing invalidated its shard since its write began. Where the cache
/// is only for speed (SQLite's file is always there to read), a row is kept from its second read
/// on (`Doorkeeper`); PostgreSQL's keeps every row read: the last seen stands in during an outage.
final class RecordCache: Sendable {
    /// A class, so that the dictionary holds a pointer per row rather than the whole record
    /// (several hundred bytes, times the table's spare capacity), and a hit updates `used` in
    /// place. Only touched under the lock.
    private final class Entry {
        let record: SealedCredentialRecord
        let bytes: Int
        var used: UInt64

        init(record: SealedCredentialRecord, bytes: Int, used: UInt64) {
            self.record = record
            self.bytes = bytes
            self.used = used
        }
    }

    private struct State {
        /// Keyed by the id itself: its text (`description`) was built, and allocated, per lookup.
        var entries: [CredentialID: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
        var invalidations = [UInt64](repeating: 0, count: 256)
        /// Rows a transaction of this process is writing (how many at once), until it ends.
        var writing: [CredentialID: Int] = [:]
        /// Nil when every row read is kept.
        var doorkeeper: Doorkeeper?
        /// Rows a transaction here ended without knowing whether it committed, until when their
        /// own changes still drop them (`heardOwnChange`).
        var uncertain: [CredentialID: ContinuousClock.Instant] = [:]
        /// Set when `uncertain` overflowed: until then every own change drops its row.
        var allOwnChangesUncertainUntil: ContinuousClock.Instant?
        var hits = 0
        var misses = 0
        /// Every change of a row this process began, ended or heard of (`changeCount`).
        var changes: UInt64 = 0

        /// Forgets `id`'s row, and turns away reads of its shard begun before now.
        mutating func drop(_ id: CredentialID, shard: Int) {
            invalidations[shard] &+= 1
            changes &+= 1
            if let removed = entries.removeValue(forKey: id) { bytes -= removed.bytes }
        }

        /// Forgets every row, and turns away every read begun before now.
        mutating func dropAll() {
            for shard in invalidations.indices { invalidations[shard] &+= 1 }
            changes &+= 1
            entries = [:]
            bytes = 0
        }
    }

    let capacity: Int
    let byteLimit: Int
    static let maximumUncertain = 4096
    /// How long after such an end a change of the row heard here may still be that commit,
    /// landing late (a COMMIT the server received commits as soon as it can; a minute is ample).
    static let uncertainFor = Duration.seconds(60)
    /// False: a `Doorkeeper` admits rows.
    private let keepsRowsReadOnce: Bool
    private let state: Mutex<State>

    /// `keepsRowsReadOnce`: false keeps a row read from the database from its second read on, and
    /// a row written whole only if a read wanted it before or it was cached (`Doorkeeper`).
    init(capacity: Int, bytes: Int = .max, keepsRowsReadOnce: Bool = true) {
        self.capacity = max(1, capacity)
        byteLimit = max(0, bytes)
        self.keepsRowsReadOnce = keepsRowsReadOnce || byteLimit == 0
        var state = State()
        if !self.keepsRowsReadOnce { state.doorkeeper = Doorkeeper(rows: min(self.capacity, byteLimit / 1024)) }
        self.state = Mutex(state)
    }

    /// A ticket taken before reading `id` from the database, handed back to `insert`.
    struct Ticket { let shard: Int, count: UInt64 }

    func ticket(for id: CredentialID) -> Ticket {
        let shard = Self.shard(id)
        return state.withLock { Ticket(shard: shard, count: $0.invalidations[shard]) }
    }

    func record(_ id: CredentialID) -> SealedCredentialRecord? {
        state.withLock { state in
            state.clock += 1
            guard let entry = state.entries[id], state.writing.isEmpty || state.writing[id] == nil
            else { return nil }
            state.hits += 1
            entry.used = state.clock
            return entry.record
        }
    }

    /// The changes counted so far, nil while a transaction of this process is writing a row (its
    /// commit may land at any moment) or when the cache keeps nothing: a listing read after
    /// taking it is current while the count is the same (`CredentialStore.changeCount`). A write
    /// counts as it begins (`beginWrite`) and ends (`endWrites`); another node's change as it is
    /// heard (`invalidate`), an own commit whose outcome was unknown as it is heard landing
    /// (`heardOwnChange`), and `invalidateAll`; whether or not the rows were cached.
    func changeCount() -> UInt64? {
        guard byteLimit > 0 else { return nil }
        return state.withLock { $0.writing.isEmpty ? $0.changes : nil }
    }

    /// Counts a row read from the database because the cache did not hold it (lookups that
    /// find nothing and read nothing, such as the event loop's, are not misses).
    func countMiss() {
        state.withLock { $0.misses += 1 }
    }

    /// Caches a row read with `ticket`, unless its id was invalidated since the ticket was taken.
    func insert(_ record: SealedCredentialRecord, ticket: Ticket) {
        let bytes = record.approximateBytes
        let hash = keepsRowsReadOnce ? 0 : Doorkeeper.hash(record.metadata.id)
        state.withLock { state in
            // The read wanted the row, whether or not it may be kept.
            let admitted = state.doorkeeper?.seenBefore(hash) ?? true
            guard state.invalidations[ticket.shard] == ticket.count else { return }
            keep(record, bytes: bytes, admitted: admitted, in: &state)
        }
    }

    /// A row as a transaction of this process wrote it whole, with the ticket its first change
    /// of the row took (`beginWrite`).
    struct WrittenRow {
        let record: SealedCredentialRecord
        let ticket: Ticket
    }

    /// Called by a transaction's writer before it changes `id`'s row (before its commit). The
    /// ticket goes with the row if the transaction writes it whole (`endWrites`).
    @discardableResult
    func beginWrite(_ id: CredentialID) -> Ticket {
        let key = id
        let shard = Self.shard(key)
        let hash = keepsRowsReadOnce ? 0 : Doorkeeper.hash(id)
        return state.withLock { state in
            state.writing[key, default: 0] += 1
            state.changes &+= 1
            if let removed = state.entries.removeValue(forKey: key) {
                state.bytes -= removed.bytes
                // A row that was cached is wanted: what the transaction writes of it may be kept.
                _ = state.doorkeeper?.seenBefore(hash)
            }
            return Ticket(shard: shard, count: state.invalidations[shard])
        }
    }

    /// Called once the transaction that began writing `ids` has committed, rolled back or failed
    /// (a commit whose outcome is unknown may have happened): reads of them go to the database
    /// again, and a row read before now is not kept. `committed` are rows the transaction wrote
    /// whole and committed: each is kept as written unless its shard was invalidated since its
    /// write began (another node's change of the row, committed after this one and heard before
    /// now, must not be overwritten by it), so the next read of a row this process just
    /// refreshed needs no database.
    /// `readUnderLock`: rows the transaction read under their lock and did not change, dropped as
    /// a change of them would be (another node's change may not have been heard yet). `uncertain`:
    /// the transaction ended without knowing whether it committed (`heardOwnChange`).
    func endWrites(
        _ ids: some Sequence<CredentialID>, readUnderLock: Set<CredentialID> = [], committed: [WrittenRow] = [],
        uncertain: Bool = false
    ) {
        let sizes = committed.map(\.record.approximateBytes)
        let now = ContinuousClock.now
        let hashes = committed.map { keepsRowsReadOnce ? 0 : Doorkeeper.hash($0.record.metadata.id) }
        state.withLock { state in
            // A row written whole is kept if a read wanted it before (a write alone, an import,
            // is not a want); a row cached when its write began was marked then.
            let current = zip(committed, zip(sizes, hashes)).filter {
                state.invalidations[$0.0.ticket.shard] == $0.0.ticket.count
            }
            for id in ids {
                state.drop(id, shard: Self.shard(id))
                if let count = state.writing[id] { state.writing[id] = count > 1 ? count - 1 : nil }
                if uncertain { state.uncertain[id] = now + Self.uncertainFor }
            }
            for id in readUnderLock { state.drop(id, shard: Self.shard(id)) }
            // Bounded: past it (many failed transactions within the minute), everything is dropped
            // and every own change is taken as uncertain until the minute is over.
            if state.uncertain.count > Self.maximumUncertain {
                state.uncertain = state.uncertain.filter { $0.value > now }
                if state.uncertain.count > Self.maximumUncertain {
                    state.uncertain = [:]
                    state.allOwnChangesUncertainUntil = now + Self.uncertainFor
                    state.dropAll()
                }
            }
            for (row, (bytes, hash)) in current {
                keep(row.record, bytes: bytes, admitted: state.doorkeeper?.contains(hash) ?? true, in: &state)
            }
        }
    }

    /// Caches `record` unless a transaction of this process is writing its row (then its end
    /// decides), or it is not `admitted` (the doorkeeper's word) and not cached already,
    /// evicting if a bound is passed.
    private func keep(_ record: SealedCredentialRecord, bytes: Int, admitted: Bool, in state: inout State) {
        let key = record.metadata.id
        guard bytes <= byteLimit, state.writing.isEmpty || state.writing[key] == nil,
            admitted || state.entries[key] != nil
        else { return }
        state.clock += 1
        let replaced = state.entries.updateValue(Entry(record: record, bytes: bytes, used: state.clock), forKey: key)
        state.bytes += bytes - (replaced?.bytes ?? 0)
        if state.entries.count > capacity || state.bytes > byteLimit {
            Self.evict(&state, keeping: capacity - capacity / 10, bytes: byteLimit - byteLimit / 10)
        }
    }

    func invalidate(_ id: CredentialID) {
        let shard = Self.shard(id)
        state.withLock { $0.drop(id, shard: shard) }
    }

    /// A change this process made, heard on PostgreSQL's change feed. One whose transaction
    /// ended knowing it committed says nothing new: the end dropped the row, turned away reads
    /// begun before it, and kept what it wrote. One whose commit's outcome was unknown (its
    /// connection lost, its deadline passed) may have landed after a read cached the row from
    /// before it: that row goes, whatever it holds (a schedule moved, a failure counted, new
    /// tokens), and so does any read begun before now.
    /// The mark lasts `uncertainFor`, not one change: a late or replayed notification of an
    /// earlier change of the row may come first.
    func heardOwnChange(_ id: CredentialID) {
        let now = ContinuousClock.now
        let shard = Self.shard(id)
        state.withLock { state in
            let everything = state.allOwnChangesUncertainUntil.map { now < $0 } ?? false
            guard everything || state.uncertain[id].map({ now < $0 }) == true else {
                state.uncertain[id] = nil
                return
            }
            state.drop(id, shard: shard)
        }
    }

    /// Forgets everything (after a lost notification connection, or a write that may have
    /// changed any row).
    func invalidateAll() {
        state.withLock { $0.dropAll() }
    }

    var statistics: (entries: Int, bytes: Int, hits: Int, misses: Int) {
        state.withLock { ($0.entries.count, $0.bytes, $0.hits, $0.misses) }
    }

    /// Drops the least recently used entries until at most `keeping` rows of at most `bytes` are
    /// left (a batch at a time: one sort per tenth of the bound, not per insert).
    private static func evict(_ state: inout State, keeping: Int, bytes: Int) {
        for (key, entry) in state.entries.sorted(by: { $0.value.used < $1.value.used }) {
            guard state.entries.count > keeping || state.bytes > bytes else { break }
            state.entries.removeValue(forKey: key)
            state.bytes -= entry.bytes
        }
    }

    private static func shard(_ id: CredentialID) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in id.namespace.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        hash = (hash ^ UInt32(UInt8(ascii: "/"))) &* 16_777_619
        for byte in id.name.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash & 255)
    }
}

extension SealedCredentialRecord {
    /// About what a cached copy holds on the heap: its envelopes and text, plus an allowance for
    /// the structures around them (docs/benchmarks.md, "The SQLite node's cache").
    var approximateBytes: Int {
        let metadata = self.metadata
        var bytes = 640 + accessToken.count + (refreshToken?.count ?? 0) + (idToken?.count ?? 0) + (extras?.count ?? 0)
        bytes += 2 * (metadata.id.namespace.utf8.count + 1 + metadata.id.name.utf8.count) + metadata.provider.utf8.count
        bytes += (metadata.subject?.utf8.count ?? 0) + (metadata.tokenType?.utf8.count ?? 0)
        for scope in metadata.scopes { bytes += 16 + scope.utf8.count }
        for (key, value) in metadata.labels { bytes += 32 + key.utf8.count + value.utf8.count }
        if let failure = metadata.lastError { bytes += failure.code.utf8.count + failure.message.utf8.count }
        return bytes
    }
}
