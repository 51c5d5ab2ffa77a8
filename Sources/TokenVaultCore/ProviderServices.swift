import Synchronization

/// What the daemon lends its provider instances: the JOSE math (`JWSCryptography`), the
/// instances' client keys and DPoP sessions, and a place to keep their servers' metadata. Keys
/// and store come from the vault, which the daemon opens after it has built its provider
/// instances: `use(_:metadata:)` hands them over then, and until it has, no client assertion or
/// DPoP proof can be made (a refresh waits for the vault to open anyway) and no metadata kept.
public final class ProviderServices: Sendable {
    public let cryptography: any JWSCryptography
    public let dpop: DPoPSessions
    private let source: Mutex<(any ClientKeySource)?>
    private let keys = Mutex<[String: any JWSSigner]>([:])
    private let metadataStore = Mutex<(any ProviderMetadataStore)?>(nil)

    public init(cryptography: any JWSCryptography, keys: (any ClientKeySource & DPoPKeySource)? = nil) {
        self.cryptography = cryptography
        self.source = Mutex(keys)
        dpop = DPoPSessions(keys: keys)
    }

    public func use(_ keys: any ClientKeySource & DPoPKeySource, metadata: (any ProviderMetadataStore)? = nil) {
        source.withLock { $0 = keys }
        dpop.use(keys)
        metadataStore.withLock { $0 = metadata }
    }

    /// Where server metadata is kept; nil until the vault is open.
    public var metadata: (any ProviderMetadataStore)? { metadataStore.withLock { $0 } }

    /// Instance `instance`'s client key, derived once.
    public func clientKey(for instance: String) throws -> any JWSSigner {
        if let key = keys.withLock({ $0[instance] }) { return key }
        guard let source = source.withLock({ $0 }) else {
            throw VaultError.integrity("the vault's keys are not open yet: no client assertion can be signed")
        }
        let made = try source.clientKey(for: instance)
        return keys.withLock { keys in
            if let existing = keys[instance] { return existing }
            keys[instance] = made
            return made
        }
    }
}
