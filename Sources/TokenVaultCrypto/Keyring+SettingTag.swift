import TokenVaultCore

extension Keyring {
    /// A tag over plain data the vault keeps in its settings and must find unchanged (a provider's
    /// kept metadata, which says where its tokens go): keyed BLAKE2b of the DPoP seed over `label`
    /// and `message`, so a database writer without the master key cannot forge one.
    public func settingTag(_ message: [UInt8], label: String) throws -> [UInt8] {
        guard let seed = secret(.dpopSeed) else { throw VaultError.integrity("this vault has no DPoP seed yet") }
        return KeyedHash.mac(key: seed, Array(label.utf8) + [0] + message)
    }
}
