/// The audit trail's hash chains: each row's MAC covers its content and the previous row's MAC
/// in its chain, under the vault's audit key (`Sealer.auditMAC`), so a row edited or removed in
/// the database (by anyone without the key) no longer verifies. Two sealed ends make a chain
/// whole: the `anchor` (the last row pruned: the chain survives pruning) and the `head` (the last
/// row written: rows cut from the end are noticed). Pure, apart from the MAC function it is given.
///
/// One chain per node: appending takes only the node's own chain's turn, so a node that froze in
/// the middle of an audited write holds up nobody else's. The chain named "" is the
/// vault's first; it keeps the version 1 encodings, under which its rows were written.
public struct AuditChain: Sendable {
    /// The keyed MAC (32 bytes); nil when the vault has no audit key yet.
    let mac: @Sendable ([UInt8]) -> [UInt8]?

    public init(mac: @escaping @Sendable ([UInt8]) -> [UInt8]?) { self.mac = mac }

    /// The MAC of `row` after `previous` (nil: the first row of its chain).
    public func link(previous: [UInt8]?, row: StoredAuditEvent) -> [UInt8]? {
        mac((previous ?? []) + Self.canonical(row))
    }

    /// The seal of a chain end: nobody without the key can point it elsewhere, or at another chain.
    public func seal(_ end: AuditChainEnd) -> [UInt8]? {
        var bytes: [UInt8]
        if end.chain.isEmpty {
            bytes = Array("tokenvault.audit-chain.v1\u{0}\(end.name.rawValue)\u{0}".utf8)
            Self.append(end.rowID, to: &bytes)
        } else {
            bytes = Array("tokenvault.audit-chain.v2\u{0}".utf8)
            Self.append(end.chain, to: &bytes)
            Self.append(end.name.rawValue, to: &bytes)
            Self.append(end.rowID, to: &bytes)
            Self.append(end.position, to: &bytes)
        }
        return mac(bytes + end.mac)
    }

    /// A chain end sealed (nil when the vault has no audit key yet).
    public func sealed(_ name: AuditChainEnd.Name, at row: StoredAuditEvent, mac end: [UInt8]) -> AuditChainEnd? {
        var unsealed = AuditChainEnd(
            chain: row.chain, name: name, rowID: row.id, position: row.position, mac: end, seal: [])
        guard let seal = seal(unsealed) else { return nil }
        unsealed.seal = seal
        return unsealed
    }

    /// A row's fields, each length-prefixed or flagged, so no two rows encode alike. Rows of the
    /// first chain keep version 1 (their id is their position); the others add chain and position.
    static func canonical(_ row: StoredAuditEvent) -> [UInt8] {
        var bytes: [UInt8]
        if row.chain.isEmpty {
            bytes = Array("tokenvault.audit.v1\u{0}".utf8)
        } else {
            bytes = Array("tokenvault.audit.v2\u{0}".utf8)
            append(row.chain, to: &bytes)
            append(row.position, to: &bytes)
        }
        let event = row.event
        append(row.id, to: &bytes)
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

/// One end of an audit chain, as stored in `audit_chain`.
public struct AuditChainEnd: Sendable, Equatable {
    public enum Name: String, Sendable, CaseIterable {
        /// The last row pruned.
        case anchor
        /// The last row written.
        case head
    }

    /// The chain (a node's; "" the vault's first).
    public var chain: String
    public var name: Name
    public var rowID: Int64
    /// The row's place in its chain.
    public var position: Int64
    public var mac: [UInt8]
    public var seal: [UInt8]

    public init(chain: String = "", name: Name, rowID: Int64, position: Int64? = nil, mac: [UInt8], seal: [UInt8]) {
        self.chain = chain
        self.name = name
        self.rowID = rowID
        self.position = position ?? rowID
        self.mac = mac
        self.seal = seal
    }
}
