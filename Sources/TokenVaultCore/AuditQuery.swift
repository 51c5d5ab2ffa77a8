/// Which audit rows a read returns, a page at a time: up to `limit` of them past `cursor` (a row
/// id, not itself included) in `order`, optionally only those about one credential. Row ids
/// follow the order rows were written, so they are the cursor either way.
public struct AuditQuery: Sendable, Equatable {
    /// Spelled as the API's `order` parameter.
    public enum Order: String, Sendable, Equatable {
        /// Ids ascending: a walk of the whole trail (verification, copies, a log shipper
        /// following new rows by cursor).
        case oldestFirst = "oldest"
        /// Ids descending: what an operator reads first (the API's and the CLI's default).
        case newestFirst = "newest"
    }

    public var order: Order
    /// The last id of the previous page; nil for the first.
    public var cursor: Int64?
    public var credentialID: CredentialID?
    public var limit: Int

    public init(_ order: Order, cursor: Int64? = nil, credentialID: CredentialID? = nil, limit: Int) {
        self.order = order
        self.cursor = cursor
        self.credentialID = credentialID
        self.limit = limit
    }

    /// Whether a row with this id and credential belongs on the page (before `limit` applies):
    /// the rule the SQL of each backend spells, for stores kept in memory.
    public func includes(id: Int64, credentialID rowCredential: CredentialID?) -> Bool {
        if let credentialID, rowCredential != credentialID { return false }
        guard let cursor else { return true }
        return order == .oldestFirst ? id > cursor : id < cursor
    }
}
