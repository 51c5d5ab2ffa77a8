/// Seals and opens secret fields. Implemented by TokenVaultCrypto's `Keyring`; Core only
/// knows that an envelope names the key term it was sealed with.
public protocol Sealer: Sendable {
    /// The term new seals use.
    var activeTerm: UInt32 { get }
    /// Seals `plaintext` under `term`, binding `associatedData`.
    func seal(_ plaintext: SecretBytes, associatedData: [UInt8], term: UInt32) throws -> [UInt8]
    /// Opens an envelope; throws `VaultError.integrity` when it does not authenticate.
    func open(_ envelope: [UInt8], associatedData: [UInt8]) throws -> SecretBytes
    /// The term named in an envelope's header, without opening it.
    func term(of envelope: [UInt8]) throws -> UInt32
    /// A one-way, fixed-length fingerprint of a secret (the refresh journal records which
    /// refresh token an attempt presented without storing the token).
    func fingerprint(_ secret: SecretBytes) -> String
    /// `count` bytes from the vault's random generator, for secrets it makes itself (a sign-in's
    /// state, PKCE verifier and nonce).
    func randomSecret(count: Int) -> SecretBytes
    /// SHA-256 of `secret` (PKCE's S256 code challenge, RFC 7636 section 4.2).
    func sha256(_ secret: SecretBytes) -> [UInt8]
    /// A 32-byte MAC of `bytes` under the vault's audit key (the audit trail's chain); nil while
    /// the vault has no audit key.
    func auditMAC(_ bytes: [UInt8]) -> [UInt8]?
    /// Re-reads the stored terms (another process may have rotated, or a held commit met a term
    /// it does not know).
    func reload() throws
    /// Whether `term`'s key is loaded: opening a field sealed under another term reads the
    /// store first (`reload`), which a caller on an event loop must not do.
    func hasKey(for term: UInt32) -> Bool
}

/// A sealer whose set of data keys can grow: key rotation adds a term here.
public protocol RotatingSealer: Sealer {
    /// Creates a data key, stores it wrapped as the new active term and returns the term.
    func addTerm() throws -> UInt32
}
