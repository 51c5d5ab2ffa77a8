import CSodium

/// libsodium's XChaCha20-Poly1305-IETF called directly, on buffers allocated once: the floor
/// that `Envelope` (benchmark 1) and the "raw open" half of benchmark 2 are measured against.
///
/// It does what any correct caller of this AEAD must do and nothing more: a fresh random
/// nonce per seal, the same amount of associated data as our envelopes authenticate (5-byte
/// header + credential/field context), no copies, no locked memory.
final class RawAEAD {
    static let keySize = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    static let nonceSize = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagSize = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    /// Bytes before the nonce in our envelope layout (version + term), kept so raw rows are
    /// exactly as long as ours.
    static let headerSize = 5

    let messageSize: Int
    private let associatedDataSize: Int
    // Buffers allocated once, freed in deinit.
    private let key: UnsafeMutablePointer<UInt8>
    private let nonce: UnsafeMutablePointer<UInt8>
    private let message: UnsafeMutablePointer<UInt8>
    private let ciphertext: UnsafeMutablePointer<UInt8>
    private let plaintext: UnsafeMutablePointer<UInt8>
    private let associatedData: UnsafeMutablePointer<UInt8>

    /// A random key and a random `messageSize`-byte message; `associatedData` is copied.
    init(messageSize: Int, associatedData context: [UInt8]) {
        self.messageSize = messageSize
        associatedDataSize = context.count
        key = Self.randomBuffer(Self.keySize)
        nonce = Self.randomBuffer(Self.nonceSize)
        message = Self.randomBuffer(messageSize)
        ciphertext = .allocate(capacity: messageSize + Self.tagSize)
        plaintext = .allocate(capacity: messageSize)
        associatedData = .allocate(capacity: max(context.count, 1))
        associatedData.initialize(from: context, count: context.count)
    }

    deinit {
        for buffer in [key, nonce, message, ciphertext, plaintext, associatedData] { buffer.deallocate() }
    }

    /// Envelope size for `messageSize` bytes: header | nonce | ciphertext | tag.
    var envelopeSize: Int { Self.headerSize + Self.nonceSize + messageSize + Self.tagSize }

    /// One seal and one open of the message, with a fresh nonce. Returns a plaintext byte.
    func sealAndOpen() -> Int {
        randombytes_buf(nonce, Self.nonceSize)
        var sealedCount: UInt64 = 0
        crypto_aead_xchacha20poly1305_ietf_encrypt(
            ciphertext, &sealedCount, message, UInt64(messageSize),
            associatedData, UInt64(associatedDataSize), nil, nonce, key)
        var openedCount: UInt64 = 0
        let result = crypto_aead_xchacha20poly1305_ietf_decrypt(
            plaintext, &openedCount, nil, ciphertext, sealedCount,
            associatedData, UInt64(associatedDataSize), nonce, key)
        precondition(result == 0 && Int(openedCount) == messageSize, "raw XChaCha20-Poly1305 round trip failed")
        return Int(plaintext[0])
    }

    /// A fresh envelope of the message in our layout (header | nonce | ciphertext + tag), for
    /// filling the raw table with rows as long as the vault's.
    func envelope() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: envelopeSize) { bytes, count in
            let header: [UInt8] = [1, 0, 0, 0, 1]
            for (index, byte) in header.enumerated() { bytes[index] = byte }
            let nonceStart = bytes.baseAddress! + Self.headerSize
            randombytes_buf(nonceStart, Self.nonceSize)
            var sealedCount: UInt64 = 0
            crypto_aead_xchacha20poly1305_ietf_encrypt(
                nonceStart + Self.nonceSize, &sealedCount, message, UInt64(messageSize),
                associatedData, UInt64(associatedDataSize), nil, nonceStart, key)
            count = envelopeSize
        }
    }

    /// Opens an envelope made by `envelope()` straight from `bytes` (SQLite's column buffer)
    /// into the preallocated plaintext buffer. Returns a plaintext byte.
    func open(envelope bytes: UnsafeRawBufferPointer) -> Int {
        precondition(bytes.count == envelopeSize, "raw envelope has the wrong size")
        let start = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let sealedStart = start + Self.headerSize + Self.nonceSize
        var openedCount: UInt64 = 0
        let result = crypto_aead_xchacha20poly1305_ietf_decrypt(
            plaintext, &openedCount, nil, sealedStart, UInt64(messageSize + Self.tagSize),
            associatedData, UInt64(associatedDataSize), start + Self.headerSize, key)
        precondition(result == 0 && Int(openedCount) == messageSize, "raw envelope does not open")
        return Int(plaintext[0])
    }

    private static func randomBuffer(_ count: Int) -> UnsafeMutablePointer<UInt8> {
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: count)
        randombytes_buf(buffer, count)
        return buffer
    }
}
