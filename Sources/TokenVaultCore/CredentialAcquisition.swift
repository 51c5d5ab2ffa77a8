/// A credential the vault is asked to obtain itself, by a grant of its provider instance (a put
/// naming a `grant` instead of tokens): where the tokens come from, and what the stored
/// credential carries besides them.
public struct CredentialAcquisition: Sendable {
    public var id: CredentialID
    public var provider: String
    public var grant: CredentialGrant
    public var labels: [String: String]
    /// The audit row written with the credential (nil: none).
    public var audit: AuditEvent?

    public init(
        id: CredentialID, provider: String, grant: CredentialGrant, labels: [String: String] = [:],
        audit: AuditEvent? = nil
    ) {
        self.id = id
        self.provider = provider
        self.grant = grant
        self.labels = labels
        self.audit = audit
    }
}
