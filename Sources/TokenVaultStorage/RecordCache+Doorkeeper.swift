import TokenVaultCore

extension RecordCache {
    /// Keeps a row out of the cache until it is wanted a second time (TinyLFU's doorkeeper): a
    /// sweep that reads each credential once, such as an export or a batch job walking the
    /// vault, then costs the cache nothing and leaves the rows read again and again in place.
    ///
    /// Two bits per id in a bit set of about 32 per row the byte bound holds; cleared once an
    /// eighth of its bits were set, so "a second time" means "within the last so many first
    /// reads". A false positive keeps a row on its first read (about 1 in 40 at the fullest),
    /// which costs memory only, never correctness: nothing here decides what a read returns.
    struct Doorkeeper {
        private var words: [UInt64]
        private let mask: Int
        private let resetAfter: Int
        private var marked = 0

        /// Sized for a cache whose byte bound holds about `rows` rows.
        init(rows: Int) {
            var bits = 4096
            while bits < min(rows, 1 << 18) * 32 { bits <<= 1 }
            words = [UInt64](repeating: 0, count: bits / 64)
            mask = bits - 1
            resetAfter = bits / 8
        }

        /// True if `id` was marked since the last reset; marks it either way.
        mutating func seenBefore(_ id: CredentialID) -> Bool {
            let (first, second) = bits(id)
            if isSet(first) && isSet(second) { return true }
            if marked >= resetAfter {
                for index in words.indices { words[index] = 0 }
                marked = 0
            }
            set(first)
            set(second)
            marked += 1
            return false
        }

        /// True if `id` was marked since the last reset.
        func contains(_ id: CredentialID) -> Bool {
            let (first, second) = bits(id)
            return isSet(first) && isSet(second)
        }

        private func bits(_ id: CredentialID) -> (Int, Int) {
            var hasher = Hasher()
            hasher.combine(id)
            let hash = UInt64(truncatingIfNeeded: hasher.finalize())
            return (Int(truncatingIfNeeded: hash) & mask, Int(truncatingIfNeeded: hash >> 32) & mask)
        }

        private func isSet(_ bit: Int) -> Bool { words[bit >> 6] & (1 << UInt64(bit & 63)) != 0 }

        private mutating func set(_ bit: Int) { words[bit >> 6] |= 1 << UInt64(bit & 63) }
    }
}
