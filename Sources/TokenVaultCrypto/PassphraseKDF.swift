import CSodium
import TokenVaultCore

/// Argon2id (libsodium `crypto_pwhash`, ALG_ARGON2ID13) turning a passphrase into the master key.
/// The salt and limits are not secret; they are stored in the vault's settings.
public struct PassphraseKDF: Sendable, Equatable {
    public enum Profile: String, Sendable, CaseIterable {
        /// About 64 MiB and 2 passes: quick unlock (tests, laptops).
        case interactive
        /// About 256 MiB and 3 passes: the default for a daemon that unlocks once.
        case moderate
        /// About 1 GiB and 4 passes.
        case sensitive
    }

    public var salt: [UInt8]
    public var opsLimit: UInt64
    public var memLimit: UInt64

    public static let saltSize = Int(crypto_pwhash_SALTBYTES)

    public init(salt: [UInt8], opsLimit: UInt64, memLimit: UInt64) {
        self.salt = salt
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// Fresh random salt with the limits of `profile`.
    public static func generate(_ profile: Profile) -> PassphraseKDF {
        let (ops, mem): (Int, Int) =
            switch profile {
            case .interactive: (crypto_pwhash_opslimit_interactive(), crypto_pwhash_memlimit_interactive())
            case .moderate: (crypto_pwhash_opslimit_moderate(), crypto_pwhash_memlimit_moderate())
            case .sensitive: (crypto_pwhash_opslimit_sensitive(), crypto_pwhash_memlimit_sensitive())
            }
        return PassphraseKDF(salt: SodiumRandom.bytes(count: saltSize), opsLimit: UInt64(ops), memLimit: UInt64(mem))
    }

    public func deriveKey(from passphrase: SecretBytes) throws -> SecretBytes {
        requireSodium()
        guard salt.count == Self.saltSize else { throw VaultError.keySource("stored KDF salt has the wrong length") }
        return try SecretBytes(count: MasterKey.size) { key in
            let result = passphrase.withUnsafeBytes { pass in
                crypto_pwhash(
                    key.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(MasterKey.size),
                    pass.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(pass.count), salt, opsLimit,
                    Int(memLimit), crypto_pwhash_ALG_ARGON2ID13)
            }
            guard result == 0 else {
                throw VaultError.keySource(
                    "Argon2id could not derive the key (out of memory for \(memLimit >> 20) MiB?)")
            }
        }
    }

    // MARK: Settings

    public static let settingKeys = (salt: "kdf.salt", opsLimit: "kdf.opslimit", memLimit: "kdf.memlimit")

    public var settings: [String: String] {
        [
            Self.settingKeys.salt: salt.map { String($0, radix: 16).leftPadded(to: 2) }.joined(),
            Self.settingKeys.opsLimit: String(opsLimit),
            Self.settingKeys.memLimit: String(memLimit),
        ]
    }

    public init(settings: [String: String?]) throws {
        guard let saltHex = settings[Self.settingKeys.salt] ?? nil,
            let ops = (settings[Self.settingKeys.opsLimit] ?? nil).flatMap(UInt64.init),
            let mem = (settings[Self.settingKeys.memLimit] ?? nil).flatMap(UInt64.init)
        else { throw VaultError.keySource("this vault's passphrase settings (kdf.*) are missing or damaged") }
        var salt: [UInt8] = []
        var index = saltHex.startIndex
        while index < saltHex.endIndex, let next = saltHex.index(index, offsetBy: 2, limitedBy: saltHex.endIndex),
            let byte = UInt8(saltHex[index..<next], radix: 16)
        {
            salt.append(byte)
            index = next
        }
        self.init(salt: salt, opsLimit: ops, memLimit: mem)
    }
}
