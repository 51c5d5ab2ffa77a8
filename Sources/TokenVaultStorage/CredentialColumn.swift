/// The `credentials` table as the queries see it: one table of columns that builds the SELECT
/// list, the INSERT list and the mapping of a row to `CredentialMetadata` and
/// `SealedCredentialRecord`, so no query reads a column by a number of its own. A test checks
/// every name against the schema (`PRAGMA table_info`).
enum CredentialColumn: Int32, CaseIterable {
    case id, namespace, name, provider, kind, subject, status, generation, tokenType, scopes, labels, issuedAt,
        expiresAt, refreshAt, refreshTokenExpiresAt, lastErrorCode, lastErrorMessage, lastErrorAt, createdAt,
        updatedAt, refreshFailures, grant, sealTerm, accessToken, refreshToken, idToken, extras

    /// The column's name in the schema.
    var name: String {
        switch self {
        case .id: "id"
        case .namespace: "namespace"
        case .name: "name"
        case .provider: "provider"
        case .kind: "kind"
        case .subject: "subject"
        case .status: "status"
        case .generation: "generation"
        case .tokenType: "token_type"
        case .scopes: "scopes"
        case .labels: "labels"
        case .issuedAt: "issued_at"
        case .expiresAt: "expires_at"
        case .refreshAt: "refresh_at"
        case .refreshTokenExpiresAt: "refresh_token_expires_at"
        case .lastErrorCode: "last_error_code"
        case .lastErrorMessage: "last_error_message"
        case .lastErrorAt: "last_error_at"
        case .createdAt: "created_at"
        case .updatedAt: "updated_at"
        case .refreshFailures: "refresh_failures"
        case .grant: "grant_parameters"
        case .sealTerm: "seal_term"
        case .accessToken: "access_token"
        case .refreshToken: "refresh_token"
        case .idToken: "id_token"
        case .extras: "extras"
        }
    }

    /// Whether the column holds a sealed envelope (a metadata read leaves these out).
    var isSealed: Bool {
        switch self {
        case .accessToken, .refreshToken, .idToken, .extras: true
        default: false
        }
    }

    /// Columns a metadata read selects, then the two flags it derives from sealed columns.
    static let metadata = allCases.filter { !$0.isSealed }
    /// `refresh_token IS NOT NULL`, `id_token IS NOT NULL`: after the metadata columns.
    static let hasRefreshTokenIndex = Int32(metadata.count)
    static let hasIDTokenIndex = Int32(metadata.count + 1)

    /// Names of the two flags in a SELECT (PostgreSQL rows are read by name).
    static let hasRefreshTokenColumn = "has_refresh_token"
    static let hasIDTokenColumn = "has_id_token"

    static let metadataSelectList =
        (metadata.map(\.name) + [
            "refresh_token IS NOT NULL AS \(hasRefreshTokenColumn)", "id_token IS NOT NULL AS \(hasIDTokenColumn)",
        ]).joined(separator: ", ")
    /// A record read: the metadata list, then the sealed columns (indexes from `sealedIndex`).
    static let sealed = allCases.filter(\.isSealed)
    static let recordSelectList = metadataSelectList + ", " + sealed.map(\.name).joined(separator: ", ")

    /// Where `column` sits in a record or metadata SELECT built from these lists (looked up in a
    /// table built once: every token read reads twenty of them).
    var selectIndex: Int32 { Self.selectIndexes[Int(rawValue)] }

    private static let selectIndexes: [Int32] = allCases.map { column in
        if let index = metadata.firstIndex(of: column) { return Int32(index) }
        return Int32(metadata.count + 2 + sealed.firstIndex(of: column)!)
    }

    /// Every column, in order, for the upsert.
    static let insertList = allCases.map(\.name).joined(separator: ", ")
    static let insertPlaceholders = (1...allCases.count).map { "?\($0)" }.joined(separator: ", ")
    /// `ON CONFLICT (id) DO UPDATE SET …` for every column but the key and `created_at`.
    static let updateList = allCases.filter { ![.id, .namespace, .name, .createdAt].contains($0) }
        .map { "\($0.name) = excluded.\($0.name)" }.joined(separator: ", ")
}
