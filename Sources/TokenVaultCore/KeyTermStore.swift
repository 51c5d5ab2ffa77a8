/// A data key as stored: wrapped (sealed) by the master key.
public struct WrappedTerm: Sendable, Equatable {
    public var term: UInt32
    public var wrappedKey: [UInt8]
    public var isActive: Bool
    public var createdAt: Timestamp

    public init(term: UInt32, wrappedKey: [UInt8], isActive: Bool, createdAt: Timestamp) {
        self.term = term
        self.wrappedKey = wrappedKey
        self.isActive = isActive
        self.createdAt = createdAt
    }
}

/// Persistence of wrapped data keys and plain vault settings (key source, KDF parameters, the
/// master key's check value).
public protocol KeyTermStore: Sendable {
    func terms() throws -> [WrappedTerm]
    /// Stores `term` as the active term (the previously active one becomes retired) in one
    /// durable transaction that first compares the vault's key check value with `keyCheck`: a
    /// process whose master key was replaced by a rekey must not wrap a term that nothing else
    /// can open (`wrong_master_key`). A vault without a check value records this one.
    func addActiveTerm(_ term: WrappedTerm, keyCheck: String) throws
    /// Removes a retired term no row uses. Returns false (and changes nothing) while any
    /// credential or pending sign-in is still sealed under it, or it is the active term.
    func removeTerm(_ term: UInt32) throws -> Bool
    /// Rekey, in one durable transaction: reads every term, replaces each with `rewrap`'s result,
    /// checks that every term was covered, and stores `settings` and the new key check value.
    /// A term added by another process is either in it or added after it (then under the new key
    /// check value, which the old key fails).
    func rewrap(
        keyCheck: String, settings: [String: String], _ rewrap: @escaping @Sendable (WrappedTerm) throws -> WrappedTerm
    ) throws
    /// How many credential rows are sealed under each term.
    func termUsage() throws -> [UInt32: Int]
    func setting(_ key: String) throws -> String?
    func setSettings(_ settings: [String: String]) throws
    /// Records `value` under `key` unless the key has a value already, and returns the stored
    /// value: two processes opening an older vault at once agree on one (its audit key).
    func addSetting(_ key: String, _ value: String) throws -> String
}

/// Names of plain vault settings (`vault_meta`) that more than one module reads.
public enum VaultSetting {
    /// The master key's check value (`KeyedHash.keyCheckValue`), hex.
    public static let keyCheck = "key.check"
}
