import PostgresNIO

/// A statement run prepared (`PostgresLink.execute`): the reads every refresh runs, which
/// PostgreSQL would otherwise parse, analyse and plan at each call. Each must have a generic plan
/// as good as a custom one (after five runs PostgreSQL may keep planning without the values:
/// `PostgresPreparedStatementTests` checks the plans); rows are read by column name, as
/// everywhere else.
protocol PreparedStatement: PostgresPreparedStatement where Row == PostgresRow {}

extension PreparedStatement {
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }
}

/// One credential row by id (`PostgresLink.credentialRecord`).
struct RecordByID: PreparedStatement {
    static let name = "tokenvault_record_by_id"
    static let sql = "SELECT \(PostgresDatabase.recordColumns) FROM credentials WHERE id = $1"

    let id: String

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(id)
        return bindings
    }
}

/// A statement of a group's claimed credentials (`PostgresCredentialWriter.prefetch`): their ids
/// are its one parameter, a text array.
protocol GroupStatement: PreparedStatement {
    var ids: [String] { get }
}

extension GroupStatement {
    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 1)
        bindings.append(ids)
        return bindings
    }
}

/// A group's claims locked without waiting, with the active key term (`prefetch`).
struct LockClaims: GroupStatement {
    static let name = "tokenvault_lock_claims"
    static let sql = """
        SELECT c.id, pg_try_advisory_xact_lock(hashtextextended(c.id, 0)),
               (SELECT term FROM key_terms WHERE state = 'active')
        FROM unnest($1::text[]) AS c(id)
        """

    let ids: [String]
}

/// A group's claimed rows, read once their locks are had (`prefetch`).
struct RecordsByID: GroupStatement {
    static let name = "tokenvault_records_by_id"
    static let sql = "SELECT \(PostgresDatabase.recordColumns) FROM credentials WHERE id = ANY($1::text[])"

    let ids: [String]
}

/// A group's claimed credentials' open refresh attempts (`prefetch`).
struct OpenAttemptsOf: GroupStatement {
    static let name = "tokenvault_open_attempts_of"
    static let sql = """
        SELECT \(PostgresCredentialWriter.attemptColumns) FROM refresh_attempts
        WHERE credential_id = ANY($1::text[]) AND state = 'open'
        """

    let ids: [String]
}
