/// A credential row as storage sees it: plain metadata and opaque sealed envelopes.
public struct SealedCredentialRecord: Sendable, Equatable {
    public var metadata: CredentialMetadata
    /// The key term every envelope of this row was sealed with.
    public var sealTerm: UInt32
    public var accessToken: [UInt8]
    public var refreshToken: [UInt8]?
    public var idToken: [UInt8]?
    public var extras: [UInt8]?

    public init(
        metadata: CredentialMetadata, sealTerm: UInt32, accessToken: [UInt8], refreshToken: [UInt8]?,
        idToken: [UInt8]?, extras: [UInt8]?
    ) {
        self.metadata = metadata
        self.sealTerm = sealTerm
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.idToken = idToken
        self.extras = extras
    }

    public subscript(field: SealedField) -> [UInt8]? {
        get {
            switch field {
            case .accessToken: accessToken
            case .refreshToken: refreshToken
            case .idToken: idToken
            case .extras: extras
            }
        }
        set {
            switch field {
            case .accessToken: accessToken = newValue ?? []
            case .refreshToken: refreshToken = newValue
            case .idToken: idToken = newValue
            case .extras: extras = newValue
            }
        }
    }
}
