import Synchronization

/// What provider instances sign and verify with: the JOSE math (`JWSCryptography`), the
/// instances' client keys and their DPoP sessions. The keys come from the keyring, which the
/// daemon opens after it has built its provider instances: `use(_:)` hands them over then, and
/// until it has, no client assertion or DPoP proof can be made (a refresh waits for the vault to
/// open anyway).
public final class ProviderSigning: Sendable {
    public let cryptography: any JWSCryptography
    public let dpop: DPoPSessions
    private let source: Mutex<(any ClientKeySource)?>
    private let keys = Mutex<[String: any JWSSigner]>([:])

    public init(cryptography: any JWSCryptography, keys: (any ClientKeySource & DPoPKeySource)? = nil) {
        self.cryptography = cryptography
        self.source = Mutex(keys)
        dpop = DPoPSessions(keys: keys)
    }

    public func use(_ keys: any ClientKeySource & DPoPKeySource) {
        source.withLock { $0 = keys }
        dpop.use(keys)
    }

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
