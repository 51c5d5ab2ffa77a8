import Synchronization
import TokenVaultCore

/// The vault's data keys ("terms") and its wrapped secrets (audit key, spool key), unwrapped in
/// locked memory, and the `Sealer` built on them.
///
/// Each term is a random 32-byte key stored in the database sealed by the master key (an
/// `Envelope` whose associated data names the term). New seals use the active term; opening
/// picks the key the envelope's header names. Following HashiCorp Vault's keyring: storage is
/// untrusted, the master key only ever wraps data keys, so changing it re-wraps terms only.
public final class Keyring: RotatingSealer {
    private struct State: ~Copyable {
        var keys: [UInt32: SecretBytes]
        var active: UInt32
    }

    private let masterKey: SecretBytes
    private let store: any KeyTermStore
    let clock: any VaultClock
    private let state: Mutex<State>
    /// The master key's check value (`KeyedHash.keyCheckValue`), compared with the stored one
    /// before a term is wrapped.
    public let keyCheck: String
    /// The audit key, the spool key and the DPoP seed (`WrappedSecret`): random, wrapped by the master key in the
    /// vault's settings, so a rekey re-wraps them and what they protect stays readable.
    private let secrets: Mutex<[WrappedSecret: SecretBytes]>

    /// Unwraps every stored term. Throws `wrongMasterKey` (before anything is written) when
    /// the master key does not open them, or does not match the vault's key check value.
    public init(masterKey: SecretBytes, store: any KeyTermStore, clock: any VaultClock = SystemClock()) throws {
        self.masterKey = masterKey
        self.store = store
        self.clock = clock
        keyCheck = KeyedHash.keyCheckValue(masterKey)
        if let stored = try store.setting(VaultSetting.keyCheck), stored != keyCheck {
            throw VaultError.wrongMasterKey(
                "the master key does not match this vault's key check value: wrong key file or passphrase")
        }
        let (keys, active) = try Self.unwrapAll(try store.terms(), masterKey: masterKey)
        state = Mutex(State(keys: keys, active: active))
        var secrets: [WrappedSecret: SecretBytes] = [:]
        for secret in WrappedSecret.all {
            if let hex = try store.setting(secret.setting) {
                secrets[secret] = try secret.unwrap(hex, masterKey: masterKey)
            }
        }
        self.secrets = Mutex(secrets)
    }

    /// Records what a vault created by an older version lacks: the key check value and the audit
    /// key. Call after migrations: opening a vault writes nothing before its key is known to be right.
    public func recordMissingSettings() throws {
        if try store.setting(VaultSetting.keyCheck) == nil {
            _ = try store.addSetting(VaultSetting.keyCheck, keyCheck)
        }
        for secret in WrappedSecret.all where self.secret(secret) == nil {
            let wrapped = secret.wrap(SodiumRandom.secret(count: secret.size), masterKey: masterKey)
            let stored = try store.addSetting(secret.setting, wrapped)
            let key = try secret.unwrap(stored, masterKey: masterKey)
            secrets.withLock { $0[secret] = key }
        }
    }

    func secret(_ secret: WrappedSecret) -> SecretBytes? { secrets.withLock { $0[secret] } }

    public func auditMAC(_ bytes: [UInt8]) -> [UInt8]? {
        secret(.auditKey).map { KeyedHash.mac(key: $0, bytes) }
    }

    /// The spool's public key: the courier seals answers to it (nil before `recordMissingSettings`).
    public var spoolPublicKey: [UInt8]? { secret(.spoolKey).map(SealedBox.publicKey(of:)) }

    /// Opens an answer the courier sealed to the spool's public key.
    public func openSpooled(_ sealed: [UInt8]) throws -> SecretBytes {
        guard let key = secret(.spoolKey) else { throw VaultError.integrity("this vault has no spool key yet") }
        return try SealedBox.open(sealed, secretKey: key)
    }

    /// Creates the first term of a new vault (no-op when terms exist) and returns the keyring.
    public static func bootstrap(masterKey: SecretBytes, store: any KeyTermStore, clock: any VaultClock = SystemClock())
        throws -> Keyring
    {
        if try store.terms().isEmpty {
            try store.addActiveTerm(
                wrap(SodiumRandom.secret(count: 32), term: 1, masterKey: masterKey, now: clock.now),
                keyCheck: KeyedHash.keyCheckValue(masterKey))
        }
        let keyring = try Keyring(masterKey: masterKey, store: store, clock: clock)
        try keyring.recordMissingSettings()
        return keyring
    }

    public var activeTerm: UInt32 { state.withLock { $0.active } }
    public var knownTerms: [UInt32] { state.withLock { $0.keys.keys.sorted() } }

    public func seal(_ plaintext: SecretBytes, associatedData: [UInt8], term: UInt32) throws -> [UInt8] {
        Envelope.seal(plaintext, key: try key(for: term), term: term, associatedData: associatedData)
    }

    public func open(_ envelope: [UInt8], associatedData: [UInt8]) throws -> SecretBytes {
        try Envelope.open(envelope, key: try key(for: try Envelope.term(of: envelope)), associatedData: associatedData)
    }

    public func term(of envelope: [UInt8]) throws -> UInt32 { try Envelope.term(of: envelope) }

    public func fingerprint(_ secret: SecretBytes) -> String { SHA256.fingerprint(secret) }
    public func randomSecret(count: Int) -> SecretBytes { SodiumRandom.secret(count: count) }
    public func sha256(_ secret: SecretBytes) -> [UInt8] { SHA256.digest(secret) }

    /// Wraps a new random data key as the next active term. Refused (`wrong_master_key`) if the
    /// vault's key check value no longer matches this keyring's master key: a rekey since this
    /// process opened the vault would otherwise leave a term only the old key opens.
    public func addTerm() throws -> UInt32 {
        let next = (try store.terms().map(\.term).max() ?? 0) + 1
        try store.addActiveTerm(
            Self.wrap(SodiumRandom.secret(count: 32), term: next, masterKey: masterKey, now: clock.now),
            keyCheck: keyCheck)
        try reload()
        return next
    }

    public func reload() throws {
        let (keys, active) = try Self.unwrapAll(try store.terms(), masterKey: masterKey)
        state.withLock { state in
            state.keys = keys
            state.active = active
        }
    }

    /// Rekey: every term, read inside one durable transaction, re-wrapped under `newMasterKey`,
    /// with `settings` and the new key's check value. Afterwards this keyring (which holds the
    /// old key) must not be used for key changes again.
    public func rekey(to newMasterKey: SecretBytes, settings: [String: String]) throws {
        var settings = settings
        for secret in WrappedSecret.all {
            if let key = self.secret(secret) { settings[secret.setting] = secret.wrap(key, masterKey: newMasterKey) }
        }
        try store.rewrap(keyCheck: KeyedHash.keyCheckValue(newMasterKey), settings: settings) { [masterKey] stored in
            let key = try Self.unwrap(stored, masterKey: masterKey)
            var wrapped = Self.wrap(key, term: stored.term, masterKey: newMasterKey, now: stored.createdAt)
            wrapped.isActive = stored.isActive
            return wrapped
        }
    }

    public func hasKey(for term: UInt32) -> Bool { state.withLock { $0.keys[term] != nil } }

    /// The key for `term`, re-reading the store once if another process added it.
    private func key(for term: UInt32) throws -> SecretBytes {
        if let key = state.withLock({ $0.keys[term] }) { return key }
        try reload()
        guard let key = state.withLock({ $0.keys[term] }) else { throw VaultError.unknownKeyTerm(term) }
        return key
    }

    // MARK: Wrapping

    private static func associatedData(term: UInt32) -> [UInt8] { Array("tokenvault.term.v1\u{0}\(term)".utf8) }

    static func wrap(_ dataKey: SecretBytes, term: UInt32, masterKey: SecretBytes, now: Timestamp) -> WrappedTerm {
        WrappedTerm(
            term: term,
            wrappedKey: Envelope.seal(dataKey, key: masterKey, term: term, associatedData: associatedData(term: term)),
            isActive: true, createdAt: now)
    }

    static func unwrap(_ stored: WrappedTerm, masterKey: SecretBytes) throws -> SecretBytes {
        do {
            let key = try Envelope.open(
                stored.wrappedKey, key: masterKey, associatedData: associatedData(term: stored.term))
            guard key.count == XChaCha20Poly1305.keySize else {
                throw VaultError.integrity("data key term \(stored.term) has \(key.count) bytes, expected 32")
            }
            return key
        } catch let error as VaultError where error.code == .integrityError {
            throw VaultError.wrongMasterKey(
                "the master key does not open this vault's data key (term \(stored.term)): wrong key file or passphrase"
            )
        }
    }

    private static func unwrapAll(_ terms: [WrappedTerm], masterKey: SecretBytes) throws -> (
        [UInt32: SecretBytes], UInt32
    ) {
        guard let active = terms.first(where: \.isActive) else {
            throw VaultError.keySource("this vault has no active data key; was it created with `tokenvault init`?")
        }
        var keys: [UInt32: SecretBytes] = [:]
        for stored in terms { keys[stored.term] = try unwrap(stored, masterKey: masterKey) }
        return (keys, active.term)
    }
}
