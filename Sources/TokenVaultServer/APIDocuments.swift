import TokenVaultCore

struct HealthDocument: Encodable {
    struct Database: Encodable {
        let schemaVersion: Int
        enum CodingKeys: String, CodingKey { case schemaVersion = "schema_version" }
    }
    let status: String
    let version: String
    let database: Database
    let uptimeSeconds: Double
    enum CodingKeys: String, CodingKey { case status, version, database, uptimeSeconds = "uptime_seconds" }
}

struct TokenDocument: Encodable {
    let accessToken: String
    let tokenType: String
    let expiresAt: String?
    let idToken: String?
    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token", tokenType = "token_type", expiresAt = "expires_at", idToken = "id_token"
    }
}

/// One page of a listing; `next_cursor` is always present (`null` on the last page).
struct PageDocument<Item: Encodable>: Encodable {
    let items: [Item]
    let nextCursor: String?
    enum CodingKeys: String, CodingKey { case items, nextCursor = "next_cursor" }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(items, forKey: .items)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}

struct RotateKeyDocument: Encodable {
    let newTerm: UInt32
    let resealed: Int
    let removedTerms: [UInt32]
    let remainingTerms: [UInt32]
    enum CodingKeys: String, CodingKey {
        case newTerm = "new_term", resealed, removedTerms = "removed_terms", remainingTerms = "remaining_terms"
    }
}

struct AuditEventDocument: Encodable {
    let id: Int64
    let at: String
    let uid: UInt32?
    let gid: UInt32?
    let pid: Int32?
    let operation: String
    let credentialID: String?
    let outcome: String
    let detail: String?
    enum CodingKeys: String, CodingKey {
        case id, at, uid, gid, pid, operation, credentialID = "credential_id", outcome, detail
    }

    init(_ stored: StoredAuditEvent) {
        id = stored.id
        at = stored.event.at.description
        uid = stored.event.uid
        gid = stored.event.gid
        pid = stored.event.pid
        operation = stored.event.operation
        credentialID = stored.event.credentialID?.description
        outcome = stored.event.outcome.rawValue
        detail = stored.event.detail
    }
}

struct BackupDocument: Encodable {
    let path: String
    let bytes: Int64
}
