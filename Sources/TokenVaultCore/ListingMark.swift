/// What a page of the credential listing was read against: the store's count of changes and
/// the held commits begun, both taken before the read (`Vault.listingMark`). The page may be
/// served again while `Vault.isCurrent` says neither moved and nothing is held: no row changed,
/// no change was under way, and no credential on it gained a `pending_commit` since.
public struct ListingMark: Sendable, Equatable {
    package let changes: UInt64
    package let holdsBegun: UInt64

    package init(changes: UInt64, holdsBegun: UInt64) {
        self.changes = changes
        self.holdsBegun = holdsBegun
    }
}
