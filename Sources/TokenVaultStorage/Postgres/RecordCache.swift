import Synchronization
import TokenVaultCore

/// The sealed rows a PostgreSQL node serves token reads from without a round trip: bounded (least
/// recently used rows go first), and never holding a row older than a change it was told about.
///
/// A row read from the database is only cached if nothing invalidated its id while it was being
/// read (each of 256 shards counts its invalidations): a change committed by another node during
/// the read would otherwise be overwritten by the older row for good.
final class RecordCache: Sendable {
    private struct Entry {
        var record: SealedCredentialRecord
        var used: UInt64
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var clock: UInt64 = 0
        var invalidations = [UInt64](repeating: 0, count: 256)
        var hits = 0
        var misses = 0
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// A ticket taken before reading `id` from the database, handed back to `insert`.
    struct Ticket { let shard: Int, count: UInt64 }

    func ticket(for id: CredentialID) -> Ticket {
        let shard = Self.shard(id.description)
        return state.withLock { Ticket(shard: shard, count: $0.invalidations[shard]) }
    }

    func record(_ id: CredentialID) -> SealedCredentialRecord? {
        state.withLock { state in
            state.clock += 1
            guard var entry = state.entries[id.description] else {
                state.misses += 1
                return nil
            }
            state.hits += 1
            entry.used = state.clock
            state.entries[id.description] = entry
            return entry.record
        }
    }

    /// Caches a row read with `ticket`, unless its id was invalidated since the ticket was taken.
    func insert(_ record: SealedCredentialRecord, ticket: Ticket) {
        let key = record.metadata.id.description
        state.withLock { state in
            guard state.invalidations[ticket.shard] == ticket.count else { return }
            state.clock += 1
            state.entries[key] = Entry(record: record, used: state.clock)
            if state.entries.count > capacity { Self.evict(&state, keeping: capacity * 9 / 10) }
        }
    }

    func invalidate(_ id: CredentialID) {
        let key = id.description
        let shard = Self.shard(key)
        state.withLock { state in
            state.invalidations[shard] &+= 1
            state.entries.removeValue(forKey: key)
        }
    }

    /// Forgets everything (after a lost notification connection: changes may have been missed).
    func invalidateAll() {
        state.withLock { state in
            for shard in state.invalidations.indices { state.invalidations[shard] &+= 1 }
            state.entries = [:]
        }
    }

    var statistics: (entries: Int, hits: Int, misses: Int) {
        state.withLock { ($0.entries.count, $0.hits, $0.misses) }
    }

    /// Drops the least recently used entries down to `keeping` (a batch at a time: one sort per
    /// tenth of the capacity, not per insert).
    private static func evict(_ state: inout State, keeping: Int) {
        let doomed = state.entries.sorted { $0.value.used < $1.value.used }.prefix(state.entries.count - keeping)
        for (key, _) in doomed { state.entries.removeValue(forKey: key) }
    }

    private static func shard(_ key: String) -> Int {
        var hash: UInt32 = 2_166_136_261
        for byte in key.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int(hash & 255)
    }
}
