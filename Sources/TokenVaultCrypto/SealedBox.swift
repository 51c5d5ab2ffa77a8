import CSodium
import TokenVaultCore

// TokenVault's only public-key cryptography: libsodium's sealed boxes (`crypto_box_seal`,
// X25519 + XSalsa20-Poly1305 with an ephemeral sender key). The courier seals provider answers
// it has to spool to the vault's spool public key; only a process holding the master key can
// unwrap the secret half and open them. Review it here.

/// An anonymous sealed box: anyone with the public key can seal, only the secret key opens.
public enum SealedBox {
    public static let publicKeySize = Int(crypto_box_publickeybytes())
    public static let secretKeySize = Int(crypto_box_secretkeybytes())
    /// Bytes a sealed box adds to its plaintext (the ephemeral public key and the tag).
    public static let overhead = Int(crypto_box_sealbytes())

    /// A fresh key pair; the secret half in locked memory.
    public static func keyPair() -> (publicKey: [UInt8], secretKey: SecretBytes) {
        requireSodium()
        var publicKey = [UInt8](repeating: 0, count: publicKeySize)
        let secretKey = SecretBytes(count: secretKeySize) { secret in
            precondition(
                crypto_box_keypair(&publicKey, secret.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0,
                "crypto_box_keypair failed")
        }
        return (publicKey, secretKey)
    }

    /// The public half of `secretKey`.
    public static func publicKey(of secretKey: SecretBytes) -> [UInt8] {
        requireSodium()
        precondition(secretKey.count == secretKeySize, "sealed box: bad secret key size")
        var publicKey = [UInt8](repeating: 0, count: publicKeySize)
        secretKey.withUnsafeBytes { secret in
            _ = crypto_scalarmult_base(&publicKey, secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return publicKey
    }

    /// Seals `plaintext` to `publicKey`.
    public static func seal(_ plaintext: SecretBytes, to publicKey: [UInt8]) -> [UInt8] {
        requireSodium()
        precondition(publicKey.count == publicKeySize, "sealed box: bad public key size")
        var sealed = [UInt8](repeating: 0, count: plaintext.count + overhead)
        plaintext.withUnsafeBytes { bytes in
            precondition(
                crypto_box_seal(
                    &sealed, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count), publicKey)
                    == 0, "crypto_box_seal failed")
        }
        return sealed
    }

    /// Opens a sealed box into locked memory; throws when it was not sealed to this key pair or
    /// was altered.
    public static func open(_ sealed: [UInt8], secretKey: SecretBytes) throws -> SecretBytes {
        requireSodium()
        guard sealed.count >= overhead, secretKey.count == secretKeySize else {
            throw VaultError.integrity("a sealed box is too short to open")
        }
        let publicKey = publicKey(of: secretKey)
        var opened = false
        let plaintext = SecretBytes(count: sealed.count - overhead) { output in
            secretKey.withUnsafeBytes { secret in
                opened =
                    crypto_box_seal_open(
                        output.baseAddress?.assumingMemoryBound(to: UInt8.self), sealed, UInt64(sealed.count),
                        publicKey, secret.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
            }
        }
        guard opened else { throw VaultError.integrity("a sealed box does not open with this vault's spool key") }
        return plaintext
    }
}
