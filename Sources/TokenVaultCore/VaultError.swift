/// Every failure TokenVault reports: a stable machine-readable `code` and a message for people.
///
/// Messages name the problem (a field, a file, a term) and never contain a secret or a
/// statement argument. Codes are part of the API: never rename one.
public struct VaultError: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: String
    public let message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) [\(code)]" }
}

extension VaultError {
    public static func invalidCredentialID(_ detail: String) -> VaultError {
        VaultError(code: "invalid_credential_id", message: "invalid credential id: \(detail)")
    }

    /// A field of a token payload or request is missing, of the wrong type or out of range.
    public static func invalidField(_ field: String, _ detail: String) -> VaultError {
        VaultError(code: "invalid_field", message: "field '\(field)': \(detail)")
    }

    public static func invalidPayload(_ detail: String) -> VaultError {
        VaultError(code: "invalid_payload", message: "invalid token payload: \(detail)")
    }

    public static func notFound(_ id: CredentialID) -> VaultError {
        VaultError(code: "credential_not_found", message: "credential \(id) does not exist")
    }

    /// A sealed value failed authentication: tampered, truncated, moved or under another key.
    public static func integrity(_ detail: String) -> VaultError {
        VaultError(code: "integrity_error", message: "integrity check failed: \(detail)")
    }

    public static func unknownKeyTerm(_ term: UInt32) -> VaultError {
        VaultError(code: "unknown_key_term", message: "no data key with term \(term) exists in this vault")
    }

    public static func wrongMasterKey(_ detail: String) -> VaultError {
        VaultError(code: "wrong_master_key", message: detail)
    }

    public static func keySource(_ detail: String) -> VaultError {
        VaultError(code: "key_source_error", message: detail)
    }

    public static func storage(_ detail: String) -> VaultError {
        VaultError(code: "storage_error", message: detail)
    }

    public static func migration(_ detail: String) -> VaultError {
        VaultError(code: "migration_error", message: detail)
    }

    public static func crypto(_ detail: String) -> VaultError {
        VaultError(code: "crypto_error", message: detail)
    }

    public static func conflict(_ detail: String) -> VaultError {
        VaultError(code: "conflict", message: detail)
    }
}
