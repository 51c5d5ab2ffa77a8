/// Thrown by a store's writer when the group it committed must not commit as one: a write that
/// failed after part of it reached the database, or a row found other than the store expected
/// when it read it ahead. The transaction is rolled back and each write of the group is run
/// again in a transaction of its own, without claims (`WriteCoalescer`).
public struct WriteGroupSplit: Error, CustomStringConvertible {
    public var reason: String

    public init(_ reason: String) { self.reason = reason }

    public var description: String { "the group commit is retried one write at a time: \(reason)" }
}
