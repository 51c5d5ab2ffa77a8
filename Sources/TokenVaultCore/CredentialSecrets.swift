/// The secret fields of a credential, in the clear (in locked memory).
public struct CredentialSecrets: Sendable, Equatable {
    public var accessToken: SecretBytes
    public var refreshToken: SecretBytes?
    public var idToken: SecretBytes?
    /// Unknown payload fields, as a JSON object, kept sealed because a provider may put
    /// anything there.
    public var extras: SecretBytes?

    public init(
        accessToken: SecretBytes, refreshToken: SecretBytes? = nil, idToken: SecretBytes? = nil,
        extras: SecretBytes? = nil
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.extras = extras
    }
}

/// A credential as read from the vault: metadata plus opened secrets.
public struct Credential: Sendable {
    public var metadata: CredentialMetadata
    public var secrets: CredentialSecrets

    public init(metadata: CredentialMetadata, secrets: CredentialSecrets) {
        self.metadata = metadata
        self.secrets = secrets
    }
}
