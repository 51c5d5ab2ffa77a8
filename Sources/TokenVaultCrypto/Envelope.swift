import CSodium
import TokenVaultCore

// All of TokenVault's symmetric cryptography is in this file. Review it here.
//
// Primitive: XChaCha20-Poly1305-IETF (libsodium `crypto_aead_xchacha20poly1305_ietf_*`):
// 256-bit key, 192-bit nonce (random per seal: collisions are negligible at any realistic
// volume), 128-bit tag.
//
// Envelope layout (every sealed field and every wrapped data key):
//
//     version (1 byte, = 1) | term (4 bytes, big-endian) | nonce (24 bytes) | ciphertext + tag
//
// The AEAD's associated data is the 5-byte header followed by the caller's associated data
// (for a credential field: credential id, generation, field name). Changing any header byte,
// any ciphertext byte, or opening with another id/generation/field fails authentication.

/// libsodium must be initialised once before any call; `sodium_init` is idempotent and thread-safe.
let sodiumIsReady: Bool = sodium_init() >= 0

@inline(__always)
func requireSodium() {
    precondition(sodiumIsReady, "libsodium failed to initialise (sodium_init returned -1)")
}

/// Thin, checked wrapper over libsodium's XChaCha20-Poly1305-IETF.
public enum XChaCha20Poly1305 {
    public static let keySize = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    public static let nonceSize = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    public static let tagSize = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// Encrypts `plaintext`, appending ciphertext + tag to `output`.
    public static func seal(
        _ plaintext: UnsafeRawBufferPointer, key: SecretBytes, nonce: UnsafeRawBufferPointer,
        associatedData: UnsafeRawBufferPointer, into output: inout [UInt8]
    ) {
        requireSodium()
        precondition(key.count == keySize && nonce.count == nonceSize, "XChaCha20-Poly1305: bad key or nonce size")
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: plaintext.count + tagSize))
        var written: UInt64 = 0
        let result = output.withUnsafeMutableBufferPointer { out in
            key.withUnsafeBytes { keyBytes in
                crypto_aead_xchacha20poly1305_ietf_encrypt(
                    out.baseAddress! + start, &written,
                    plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                    associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                    nil, nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        precondition(result == 0 && Int(written) == plaintext.count + tagSize, "XChaCha20-Poly1305 encrypt failed")
    }

    /// Decrypts ciphertext + tag straight into locked memory; throws if it does not authenticate.
    public static func open(
        _ ciphertext: UnsafeRawBufferPointer, key: SecretBytes, nonce: UnsafeRawBufferPointer,
        associatedData: UnsafeRawBufferPointer
    ) throws -> SecretBytes {
        requireSodium()
        guard key.count == keySize, nonce.count == nonceSize else {
            throw VaultError.crypto("XChaCha20-Poly1305: bad key or nonce size")
        }
        guard ciphertext.count >= tagSize else { throw VaultError.integrity("ciphertext is shorter than its tag") }
        return try SecretBytes(count: ciphertext.count - tagSize) { plaintext in
            var written: UInt64 = 0
            let result = key.withUnsafeBytes { keyBytes in
                crypto_aead_xchacha20poly1305_ietf_decrypt(
                    plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), &written, nil,
                    ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                    associatedData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(associatedData.count),
                    nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            guard result == 0 else {
                throw VaultError.integrity(
                    "the sealed value does not authenticate (tampered, moved to another row or field, or sealed under another key)"
                )
            }
        }
    }
}

/// The versioned envelope around every sealed value.
public enum Envelope {
    public static let version: UInt8 = 1
    public static let headerSize = 5
    public static let overhead = headerSize + XChaCha20Poly1305.nonceSize + XChaCha20Poly1305.tagSize

    /// Seals `plaintext` under `key` (identified by `term`) with a fresh random nonce.
    public static func seal(_ plaintext: SecretBytes, key: SecretBytes, term: UInt32, associatedData: [UInt8])
        -> [UInt8]
    {
        requireSodium()
        var envelope: [UInt8] = []
        envelope.reserveCapacity(overhead + plaintext.count)
        envelope.append(version)
        withUnsafeBytes(of: term.bigEndian) { envelope.append(contentsOf: $0) }
        envelope.append(contentsOf: repeatElement(0, count: XChaCha20Poly1305.nonceSize))
        envelope.withUnsafeMutableBytes { randombytes_buf($0.baseAddress! + headerSize, XChaCha20Poly1305.nonceSize) }
        let header = Array(envelope)
        let fullAD = Array(header[0..<headerSize]) + associatedData
        plaintext.withUnsafeBytes { plain in
            header.withUnsafeBytes { headerBytes in
                fullAD.withUnsafeBytes { ad in
                    XChaCha20Poly1305.seal(
                        plain, key: key, nonce: UnsafeRawBufferPointer(rebasing: headerBytes[headerSize...]),
                        associatedData: ad, into: &envelope)
                }
            }
        }
        return envelope
    }

    /// Opens an envelope sealed by `seal` under `key` with the same associated data.
    public static func open(_ envelope: [UInt8], key: SecretBytes, associatedData: [UInt8]) throws -> SecretBytes {
        _ = try term(of: envelope)
        let fullAD = Array(envelope[0..<headerSize]) + associatedData
        return try envelope.withUnsafeBytes { bytes in
            try fullAD.withUnsafeBytes { ad in
                try XChaCha20Poly1305.open(
                    UnsafeRawBufferPointer(rebasing: bytes[(headerSize + XChaCha20Poly1305.nonceSize)...]), key: key,
                    nonce: UnsafeRawBufferPointer(
                        rebasing: bytes[headerSize..<(headerSize + XChaCha20Poly1305.nonceSize)]),
                    associatedData: ad)
            }
        }
    }

    /// The key term named in the header; checks the length and version first.
    public static func term(of envelope: [UInt8]) throws -> UInt32 {
        guard envelope.count >= overhead else {
            throw VaultError.integrity("envelope is truncated (\(envelope.count) bytes, at least \(overhead) expected)")
        }
        guard envelope[0] == version else {
            throw VaultError.integrity("unsupported envelope version \(envelope[0]) (expected \(version))")
        }
        return envelope[1..<headerSize].reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// Random bytes and hashing from libsodium, for the few places outside the envelope that need them.
public enum SodiumRandom {
    public static func secret(count: Int) -> SecretBytes {
        requireSodium()
        return SecretBytes(count: count) { randombytes_buf($0.baseAddress!, count) }
    }

    public static func bytes(count: Int) -> [UInt8] {
        requireSodium()
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) }
        return bytes
    }
}

/// SHA-256 (libsodium `crypto_hash_sha256`): migration checksums, fingerprints, and PKCE
/// challenges of verifiers the vault made.
public enum SHA256 {
    public static func hex(_ data: some Collection<UInt8>) -> String {
        requireSodium()
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        let input = Array(data)
        _ = crypto_hash_sha256(&digest, input, UInt64(input.count))
        return digest.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// The digest of a secret, read in place.
    public static func digest(_ secret: SecretBytes) -> [UInt8] {
        requireSodium()
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        secret.withUnsafeBytes { bytes in
            _ = crypto_hash_sha256(
                &digest, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        }
        return digest
    }

    /// SHA-256 over a domain label, NUL and the secret; the first 16 bytes in hex. Refresh
    /// tokens are high-entropy, so the fingerprint identifies one without revealing it.
    public static func fingerprint(_ secret: SecretBytes) -> String {
        requireSodium()
        var state = crypto_hash_sha256_state()
        defer { sodium_memzero(&state, MemoryLayout<crypto_hash_sha256_state>.size) }
        let label = Array("tokenvault.fingerprint.v1".utf8) + [0]
        crypto_hash_sha256_init(&state)
        crypto_hash_sha256_update(&state, label, UInt64(label.count))
        secret.withUnsafeBytes { bytes in
            _ = crypto_hash_sha256_update(
                &state, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        }
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256_final(&state, &digest)
        return digest.prefix(16).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

/// Keyed BLAKE2b (libsodium `crypto_generichash` with a key): the master key's check value,
/// never a secret's hash.
public enum KeyedHash {
    /// `length` bytes (16-64) of BLAKE2b over `message` keyed with `key` (16-64 bytes).
    public static func mac(key: SecretBytes, _ message: [UInt8], length: Int = 32) -> [UInt8] {
        requireSodium()
        precondition((16...64).contains(length) && (16...64).contains(key.count), "BLAKE2b sizes")
        var digest = [UInt8](repeating: 0, count: length)
        key.withUnsafeBytes { keyBytes in
            _ = crypto_generichash(
                &digest, length, message, UInt64(message.count),
                keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), keyBytes.count)
        }
        return digest
    }

    /// A master key's check value: 16 bytes of keyed BLAKE2b over a fixed label, in hex. Stored in
    /// the vault's settings, it tells whether a process still holds the current master key
    /// without unwrapping anything, and says nothing about the key.
    public static func keyCheckValue(_ masterKey: SecretBytes) -> String {
        mac(key: masterKey, Array("tokenvault.key-check.v1".utf8), length: 16)
            .map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
