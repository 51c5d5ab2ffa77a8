import TokenVaultCore

/// One credential row, whichever database it came from, read by column: the one mapping of a row
/// to `CredentialMetadata` and `SealedCredentialRecord` (SQLite statements and PostgreSQL rows both
/// conform), and the one mapping of a record to the values the row holds.
protocol CredentialRow {
    func text(_ column: CredentialColumn) -> String?
    func integer(_ column: CredentialColumn) -> Int64?
    func blob(_ column: CredentialColumn) -> [UInt8]?
    /// `refresh_token IS NOT NULL` and `id_token IS NOT NULL` (a metadata read leaves the sealed
    /// columns out).
    var hasRefreshToken: Bool { get }
    var hasIDToken: Bool { get }
}

extension CredentialRow {
    /// The metadata; `knownID` skips parsing the id again when the read was by id.
    func metadata(knownID: CredentialID? = nil) throws -> CredentialMetadata {
        func timestamp(_ column: CredentialColumn) -> Timestamp? { integer(column).map(Timestamp.init(milliseconds:)) }
        let idText = knownID == nil ? text(.id) ?? "" : ""
        guard let id = knownID ?? (try? CredentialID(idText)),
            let kind = CredentialKind(rawValue: text(.kind) ?? ""),
            let status = CredentialStatus(rawValue: text(.status) ?? "")
        else { throw VaultError.storage("credential row '\(idText)' has an unreadable id, kind or status") }
        var failure: CredentialFailure?
        if let code = text(.lastErrorCode) {
            failure = CredentialFailure(
                code: code, message: text(.lastErrorMessage) ?? "",
                at: timestamp(.lastErrorAt) ?? Timestamp(milliseconds: 0))
        }
        return CredentialMetadata(
            id: id, provider: text(.provider) ?? "", kind: kind, subject: text(.subject), status: status,
            generation: integer(.generation) ?? 0, tokenType: text(.tokenType),
            scopes: CompactJSONColumn.strings(text(.scopes)), labels: CompactJSONColumn.labels(text(.labels)),
            issuedAt: timestamp(.issuedAt) ?? Timestamp(milliseconds: 0), expiresAt: timestamp(.expiresAt),
            refreshAt: timestamp(.refreshAt), refreshTokenExpiresAt: timestamp(.refreshTokenExpiresAt),
            lastError: failure, refreshFailures: Int(integer(.refreshFailures) ?? 0),
            createdAt: timestamp(.createdAt) ?? Timestamp(milliseconds: 0),
            updatedAt: timestamp(.updatedAt) ?? Timestamp(milliseconds: 0),
            hasRefreshToken: hasRefreshToken, hasIDToken: hasIDToken, grant: try grant())
    }

    /// The `grant_parameters` column: nil for a person's tokens. A row whose grant does not read
    /// is refused like one whose kind does not: renewing it by a guess would ask for other tokens.
    private func grant() throws -> CredentialGrant? {
        guard let json = text(.grant) else { return nil }
        guard let grant = CredentialGrant(json: json) else {
            throw VaultError.storage("credential row '\(text(.id) ?? "")' has an unreadable grant")
        }
        return grant
    }

    /// The whole sealed record (a record read selects the sealed columns too).
    func record(knownID: CredentialID? = nil) throws -> SealedCredentialRecord {
        SealedCredentialRecord(
            metadata: try metadata(knownID: knownID), sealTerm: UInt32(truncatingIfNeeded: integer(.sealTerm) ?? 0),
            accessToken: blob(.accessToken) ?? [], refreshToken: blob(.refreshToken), idToken: blob(.idToken),
            extras: blob(.extras))
    }
}

/// A value one column holds, for whichever database binds it.
enum ColumnValue: Equatable {
    case null
    case integer(Int64)
    case text(String)
    case blob([UInt8])
}

extension CredentialColumn {
    /// What the row of `record` holds in this column.
    func value(of record: SealedCredentialRecord, scopes: String, labels: String) -> ColumnValue {
        let metadata = record.metadata
        func text(_ value: String?) -> ColumnValue { value.map(ColumnValue.text) ?? .null }
        func integer(_ value: Int64?) -> ColumnValue { value.map(ColumnValue.integer) ?? .null }
        func blob(_ value: [UInt8]?) -> ColumnValue { value.map(ColumnValue.blob) ?? .null }
        switch self {
        case .id: return .text(metadata.id.description)
        case .namespace: return .text(metadata.id.namespace)
        case .name: return .text(metadata.id.name)
        case .provider: return .text(metadata.provider)
        case .kind: return .text(metadata.kind.rawValue)
        case .subject: return text(metadata.subject)
        case .status: return .text(metadata.status.rawValue)
        case .generation: return .integer(metadata.generation)
        case .tokenType: return text(metadata.tokenType)
        case .scopes: return .text(scopes)
        case .labels: return .text(labels)
        case .issuedAt: return .integer(metadata.issuedAt.milliseconds)
        case .expiresAt: return integer(metadata.expiresAt?.milliseconds)
        case .refreshAt: return integer(metadata.refreshAt?.milliseconds)
        case .refreshTokenExpiresAt: return integer(metadata.refreshTokenExpiresAt?.milliseconds)
        case .lastErrorCode: return text(metadata.lastError?.code)
        case .lastErrorMessage: return text(metadata.lastError?.message)
        case .lastErrorAt: return integer(metadata.lastError?.at.milliseconds)
        case .createdAt: return .integer(metadata.createdAt.milliseconds)
        case .updatedAt: return .integer(metadata.updatedAt.milliseconds)
        case .refreshFailures: return .integer(Int64(metadata.refreshFailures))
        case .grant: return text(metadata.grant?.json)
        case .sealTerm: return .integer(Int64(record.sealTerm))
        case .accessToken: return .blob(record.accessToken)
        case .refreshToken: return blob(record.refreshToken)
        case .idToken: return blob(record.idToken)
        case .extras: return blob(record.extras)
        }
    }

    /// Every column's value for `record`, in `allCases` order.
    static func values(of record: SealedCredentialRecord) -> [ColumnValue] {
        let scopes = CompactJSONColumn.encode(strings: record.metadata.scopes)
        let labels = CompactJSONColumn.encode(labels: record.metadata.labels)
        return allCases.map { $0.value(of: record, scopes: scopes, labels: labels) }
    }
}
