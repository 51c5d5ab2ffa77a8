import TokenVaultCore

extension RecordCache {
    /// Keeps a row out of the cache until it is wanted a second time (TinyLFU's doorkeeper): a
    /// sweep of reads that each want a credential once (a caller walking the vault, a batch job)
    /// and an import then cost the cache nothing, and the rows read again and again stay.
    ///
    /// Two bits per id in a bit set of 32 to 64 per row the byte bound holds (a power of two,
    /// at most 8 Mi bits); cleared once an eighth of its bits are set, about twice as many ids as
    /// the bound holds rows, so "a second time" means "within that many other first reads". A
    /// false positive (at most 1 in 64, just before a reset) keeps a row on its first read, which
    /// costs memory only: nothing here decides what a read returns.
    struct Doorkeeper {
        private var words: [UInt64]
        private let mask: Int
        private let resetAt: Int
        private var setBits = 0

        /// Sized for a cache whose byte bound holds about `rows` rows.
        init(rows: Int) {
            var bits = 4096
            while bits < min(rows, 1 << 18) * 32 { bits <<= 1 }
            words = [UInt64](repeating: 0, count: bits / 64)
            mask = bits - 1
            resetAt = bits / 8
        }

        /// The hash the two bits of `id` come from: taken before the cache's lock, which hits
        /// take too.
        static func hash(_ id: CredentialID) -> UInt64 {
            var hasher = Hasher()
            hasher.combine(id)
            return UInt64(truncatingIfNeeded: hasher.finalize())
        }

        /// True if the id of `hash` was marked since the last reset; marks it either way.
        mutating func seenBefore(_ hash: UInt64) -> Bool {
            let (first, second) = bits(hash)
            if isSet(first) && isSet(second) { return true }
            if setBits >= resetAt {
                for index in words.indices { words[index] = 0 }
                setBits = 0
            }
            set(first)
            set(second)
            return false
        }

        /// True if the id of `hash` was marked since the last reset.
        func contains(_ hash: UInt64) -> Bool {
            let (first, second) = bits(hash)
            return isSet(first) && isSet(second)
        }

        private func bits(_ hash: UInt64) -> (Int, Int) {
            (Int(truncatingIfNeeded: hash) & mask, Int(truncatingIfNeeded: hash >> 32) & mask)
        }

        private func isSet(_ bit: Int) -> Bool { words[bit >> 6] & (1 << UInt64(bit & 63)) != 0 }

        private mutating func set(_ bit: Int) {
            let flag: UInt64 = 1 << UInt64(bit & 63)
            if words[bit >> 6] & flag == 0 {
                words[bit >> 6] |= flag
                setBits += 1
            }
        }
    }
}
