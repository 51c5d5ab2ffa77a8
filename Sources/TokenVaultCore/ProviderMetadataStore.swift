/// An `oauth2` instance's server metadata as last read, kept in the vault's plain settings (it is
/// public), so a restart while the server's metadata cannot be read still finds the endpoints.
public struct KeptProviderMetadata: Sendable, Equatable, Codable {
    /// Where the instance's metadata comes from (its `discovery_url`, or its issuer's metadata
    /// URLs): a copy is used only by an instance configured the same way.
    public var source: String
    /// The URL that answered, for the document's own checks (the issuer its URL was made from).
    public var url: String
    /// When it was read, Unix seconds.
    public var readAt: Double
    public var document: String

    public init(source: String, url: String, readAt: Double, document: String) {
        self.source = source
        self.url = url
        self.readAt = readAt
        self.document = document
    }
}

/// Where provider instances keep their server metadata between restarts.
public protocol ProviderMetadataStore: Sendable {
    /// The copy kept for `instance`, if any (a store that cannot be read has none).
    func keptMetadata(of instance: String) async -> KeptProviderMetadata?
    /// Keeps `metadata` for `instance`, replacing an older copy; a failure is only logged by the
    /// store: the copy is a fallback.
    func keep(_ metadata: KeptProviderMetadata, of instance: String) async
}
