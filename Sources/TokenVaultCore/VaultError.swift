/// Every failure TokenVault reports: a stable machine-readable `code`, a message for people and,
/// for bad input, the `field` at fault.
///
/// Messages name the problem (a file, a term) and never contain a secret or a statement
/// argument. Codes are part of the API: never rename one (see `VaultError.Code`).
public struct VaultError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: Code
    public let message: String
    /// For `invalid_field`: the field as a path in the request (`token.expires_in`, `min_ttl`).
    public let field: String?
    /// For `rate_limited` and the unavailable codes: seconds after which trying again makes sense.
    public let retryAfter: Int?

    public init(code: Code, message: String, field: String? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.retryAfter = retryAfter
    }

    /// The message with the field named, as people read it: `field 'token.expires_in': must not be negative`.
    public var detail: String { field.map { "field '\($0)': \(message)" } ?? message }

    public var description: String { "\(detail) [\(code)]" }

    /// The same error with its field moved under `parent` (`expires_in` becomes
    /// `token.expires_in`), for a decoder whose input sits inside a larger request body.
    public func nested(under parent: String) -> VaultError {
        VaultError(
            code: code, message: message, field: field.map { "\(parent).\($0)" } ?? parent, retryAfter: retryAfter)
    }
}

extension VaultError {
    public static func invalidCredentialID(_ detail: String) -> VaultError {
        VaultError(code: .invalidCredentialID, message: "invalid credential id: \(detail)")
    }

    /// A field of a token payload or request is missing, of the wrong type or out of range.
    public static func invalidField(_ field: String, _ detail: String) -> VaultError {
        VaultError(code: .invalidField, message: detail, field: field)
    }

    public static func invalidPayload(_ detail: String) -> VaultError {
        VaultError(code: .invalidPayload, message: "invalid token payload: \(detail)")
    }

    public static func notFound(_ id: CredentialID) -> VaultError {
        VaultError(code: .credentialNotFound, message: "credential \(id) does not exist")
    }

    /// A sealed value failed authentication: tampered, truncated, moved or under another key.
    public static func integrity(_ detail: String) -> VaultError {
        VaultError(code: .integrityError, message: "integrity check failed: \(detail)")
    }

    public static func unknownKeyTerm(_ term: UInt32) -> VaultError {
        VaultError(code: .unknownKeyTerm, message: "no data key with term \(term) exists in this vault")
    }

    public static func wrongMasterKey(_ detail: String) -> VaultError {
        VaultError(code: .wrongMasterKey, message: detail)
    }

    /// A process holds a master key the vault no longer uses (a rekey happened since it opened
    /// the vault): it must not wrap a term that nothing else could open.
    public static let staleMasterKey = VaultError.wrongMasterKey(
        "this process's master key is no longer the vault's (it was changed by a rekey since the process "
            + "opened the vault); restart it with the current key before changing keys")

    public static func keySource(_ detail: String) -> VaultError {
        VaultError(code: .keySourceError, message: detail)
    }

    public static func storage(_ detail: String) -> VaultError {
        VaultError(code: .storageError, message: detail)
    }

    /// The database did not take a write now (locked past the busy timeout, full, unreachable);
    /// the same write may succeed later.
    public static func storageUnavailable(_ detail: String, retryAfter: Int? = nil) -> VaultError {
        VaultError(code: .storageUnavailable, message: detail, retryAfter: retryAfter)
    }

    /// This node's clock is `offset` seconds behind the database's (negative: ahead), too far to
    /// correct (`CorrectedClock`): the one wording of the refusal, in answers and logs.
    public static func clockSkew(_ offset: Double) -> VaultError {
        let seconds = (abs(offset) * 10).rounded() / 10
        return VaultError(
            code: .clockSkew,
            message: "this node's clock is \(seconds) s \(offset > 0 ? "behind" : "ahead of") the database's, "
                + "more than limits.max_clock_offset_seconds allows: it serves and refreshes nothing until "
                + "the clock is set right (NTP)",
            retryAfter: 5)
    }

    /// This node has not measured its clock against the database's yet (its first heartbeat has
    /// not gone through): it decides nothing about expiry until it has.
    public static let clockUnmeasured = VaultError(
        code: .clockSkew,
        message: "this node has not yet measured its clock against the database's (no heartbeat has gone "
            + "through): it serves and refreshes nothing until one has",
        retryAfter: 1)

    public static func migration(_ detail: String) -> VaultError {
        VaultError(code: .migrationError, message: detail)
    }

    public static func crypto(_ detail: String) -> VaultError {
        VaultError(code: .cryptoError, message: detail)
    }

    public static func conflict(_ detail: String) -> VaultError {
        VaultError(code: .conflict, message: detail)
    }
}
