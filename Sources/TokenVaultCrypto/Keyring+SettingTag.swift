import TokenVaultCore

extension Keyring {
    /// A tag over plain data the vault keeps in its settings and must find unchanged (a provider's
    /// kept metadata, which says where its tokens go): keyed BLAKE2b of the DPoP seed over `label`
    /// and `message`, so a database writer without the master key cannot forge one.
    public func settingTag(_ message: [UInt8], label: String) throws -> [UInt8] {
        guard let seed = secret(.dpopSeed) else { throw VaultError.integrity("this vault has no DPoP seed yet") }
        // Under a prefix of its own: no tag input can be a derived key's (`derivedScalar`).
        return KeyedHash.mac(key: seed, Array("tokenvault.setting-tag".utf8) + [0] + Array(label.utf8) + [0] + message)
    }
}
