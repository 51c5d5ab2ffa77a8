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

/// Persistence of wrapped data keys and plain vault settings (key source, KDF parameters).
public protocol KeyTermStore: Sendable {
    func terms() throws -> [WrappedTerm]
    /// Stores `term` as the active term; the previously active one becomes retired. Durable.
    func addActiveTerm(_ term: WrappedTerm) throws
    /// Removes a retired term no row uses. Returns false (and changes nothing) while any
    /// credential is still sealed under it or it is the active term.
    func removeTerm(_ term: UInt32) throws -> Bool
    /// Replaces every wrapped key and the given settings in one durable transaction (rekey).
    func rewrap(_ terms: [WrappedTerm], settings: [String: String]) throws
    /// How many credential rows are sealed under each term.
    func termUsage() throws -> [UInt32: Int]
    func setting(_ key: String) throws -> String?
    func setSettings(_ settings: [String: String]) throws
}
