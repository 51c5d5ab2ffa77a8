import TokenVaultCore

/// A random secret of the vault kept in its settings table, sealed by the master key: the audit
/// trail's MAC key, the spool's secret key and the DPoP seed. Each has its own associated data, so one cannot be
/// moved into the other's place; a rekey re-wraps them with the terms.
public struct WrappedSecret: Sendable, Hashable {
    /// The setting's key in `vault_meta`.
    public let setting: String
    let associatedData: [UInt8]
    let size: Int

    /// The audit trail's MAC key (`AuditChain`).
    public static let auditKey = WrappedSecret(setting: "audit.key", label: "tokenvault.audit-key.v1", size: 32)
    /// The secret half of the spool's key pair: the courier seals answers to its public half.
    public static let spoolKey = WrappedSecret(
        setting: "spool.key", label: "tokenvault.spool-key.v1", size: SealedBox.secretKeySize)

    /// What each provider instance's DPoP key and client key are derived from
    /// (`Keyring.derivedP256Key`, under a label each): one random seed, so every node of a shared
    /// vault holds the same keys without a table of them.
    public static let dpopSeed = WrappedSecret(setting: "dpop.seed", label: "tokenvault.dpop-seed.v1", size: 32)

    static let all: [WrappedSecret] = [.auditKey, .spoolKey, .dpopSeed]

    private init(setting: String, label: String, size: Int) {
        self.setting = setting
        self.associatedData = Array(label.utf8)
        self.size = size
    }

    /// The secret sealed by `masterKey`, as hex for the settings table.
    func wrap(_ secret: SecretBytes, masterKey: SecretBytes) -> String {
        Envelope.seal(secret, key: masterKey, term: 0, associatedData: associatedData)
            .map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    func unwrap(_ hex: String, masterKey: SecretBytes) throws -> SecretBytes {
        let characters = Array(hex.utf8)
        guard characters.count.isMultiple(of: 2) else {
            throw VaultError.integrity("the vault's \(setting) setting is not hexadecimal")
        }
        var envelope: [UInt8] = []
        envelope.reserveCapacity(characters.count / 2)
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let byte = UInt8(String(decoding: characters[index...index + 1], as: UTF8.self), radix: 16) else {
                throw VaultError.integrity("the vault's \(setting) setting is not hexadecimal")
            }
            envelope.append(byte)
        }
        return try Envelope.open(envelope, key: masterKey, associatedData: associatedData)
    }
}
