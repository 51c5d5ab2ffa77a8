/// The audit trail's hash chain: each row's MAC covers its content and the previous row's MAC,
/// under the vault's audit key (`Sealer.auditMAC`), so a row edited or removed in the database
/// (by anyone without the key) no longer verifies. Two sealed ends make the chain whole:
/// the `anchor` (the last row pruned: the chain survives pruning) and the `head` (the last row
/// written: rows cut from the end are noticed). Pure, apart from the MAC function it is given.
public struct AuditChain: Sendable {
    /// The keyed MAC (32 bytes); nil when the vault has no audit key yet.
    let mac: @Sendable ([UInt8]) -> [UInt8]?

    public init(mac: @escaping @Sendable ([UInt8]) -> [UInt8]?) { self.mac = mac }

    /// The MAC of row `id` after `previous` (nil: the first chained row).
    public func link(previous: [UInt8]?, id: Int64, event: AuditEvent) -> [UInt8]? {
        mac((previous ?? []) + Self.canonical(id: id, event: event))
    }

    /// The seal of a chain end: nobody without the key can point it elsewhere.
    public func seal(_ name: AuditChainEnd.Name, rowID: Int64, mac end: [UInt8]) -> [UInt8]? {
        var bytes = Array("tokenvault.audit-chain.v1\u{0}\(name.rawValue)\u{0}".utf8)
        Self.append(rowID, to: &bytes)
        return mac(bytes + end)
    }

    /// A row's fields, each length-prefixed or flagged, so no two rows encode alike.
    static func canonical(id: Int64, event: AuditEvent) -> [UInt8] {
        var bytes = Array("tokenvault.audit.v1\u{0}".utf8)
        append(id, to: &bytes)
        append(event.at.milliseconds, to: &bytes)
        append(event.uid.map(Int64.init), to: &bytes)
        append(event.gid.map(Int64.init), to: &bytes)
        append(event.pid.map(Int64.init), to: &bytes)
        append(event.operation, to: &bytes)
        append(event.credentialID?.description, to: &bytes)
        append(event.outcome.rawValue, to: &bytes)
        append(event.detail, to: &bytes)
        append(Int64(event.count), to: &bytes)
        append(event.lastAt?.milliseconds, to: &bytes)
        return bytes
    }

    private static func append(_ value: Int64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.bigEndian) { bytes += $0 }
    }

    private static func append(_ value: Int64?, to bytes: inout [UInt8]) {
        guard let value else { return bytes.append(0) }
        bytes.append(1)
        append(value, to: &bytes)
    }

    private static func append(_ value: String?, to bytes: inout [UInt8]) {
        guard let value else { return bytes.append(0) }
        bytes.append(1)
        let utf8 = Array(value.utf8)
        append(Int64(utf8.count), to: &bytes)
        bytes += utf8
    }
}

/// One end of the audit chain, as stored in `audit_chain`.
public struct AuditChainEnd: Sendable, Equatable {
    public enum Name: String, Sendable, CaseIterable {
        /// The last row pruned.
        case anchor
        /// The last row written.
        case head
    }

    public var name: Name
    public var rowID: Int64
    public var mac: [UInt8]
    public var seal: [UInt8]

    public init(name: Name, rowID: Int64, mac: [UInt8], seal: [UInt8]) {
        self.name = name
        self.rowID = rowID
        self.mac = mac
        self.seal = seal
    }
}
