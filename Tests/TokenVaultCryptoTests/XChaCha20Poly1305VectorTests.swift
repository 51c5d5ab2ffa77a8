import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultTesting

/// draft-irtf-cfrg-xchacha-03, appendix A.3.1 (AEAD_XChaCha20_Poly1305), through our wrapper,
/// plus the same vector altered in each way that must fail.
@Suite struct XChaCha20Poly1305VectorTests {
    static let key = RawBytes.hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
    static let nonce = RawBytes.hex("404142434445464748494a4b4c4d4e4f5051525354555657")
    static let associatedData = RawBytes.hex("50515253c0c1c2c3c4c5c6c7")
    static let plaintext = Array(
        "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
            .utf8)
    static let ciphertext = RawBytes.hex(
        "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a82f4eda7e39"
            + "ae64c6708c54c216cb96b72e1213b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9"
            + "21f9664c97637da9768812f615c68b13b52e")
    static let tag = RawBytes.hex("c0875924c1c7987947deafd8780acf49")

    func seal(_ plaintext: [UInt8], key: [UInt8] = key, nonce: [UInt8] = nonce, ad: [UInt8] = associatedData) -> [UInt8]
    {
        var output: [UInt8] = []
        plaintext.withUnsafeBytes { plain in
            nonce.withUnsafeBytes { nonceBytes in
                ad.withUnsafeBytes { adBytes in
                    XChaCha20Poly1305.seal(
                        plain, key: SecretBytes(key), nonce: nonceBytes, associatedData: adBytes, into: &output)
                }
            }
        }
        return output
    }

    func open(_ sealed: [UInt8], key: [UInt8] = key, nonce: [UInt8] = nonce, ad: [UInt8] = associatedData) throws
        -> [UInt8]
    {
        try sealed.withUnsafeBytes { sealedBytes in
            try nonce.withUnsafeBytes { nonceBytes in
                try ad.withUnsafeBytes { adBytes in
                    try XChaCha20Poly1305.open(
                        sealedBytes, key: SecretBytes(key), nonce: nonceBytes, associatedData: adBytes
                    ).revealBytes()
                }
            }
        }
    }

    @Test func sealMatchesTheDraftVector() {
        #expect(seal(Self.plaintext) == Self.ciphertext + Self.tag)
    }

    @Test func openRecoversThePlaintext() throws {
        #expect(try open(Self.ciphertext + Self.tag) == Self.plaintext)
    }

    @Test func emptyPlaintextRoundTrips() throws {
        let sealed = seal([])
        #expect(sealed.count == XChaCha20Poly1305.tagSize)
        #expect(try open(sealed).isEmpty)
    }

    @Test(arguments: [
        "flipped ciphertext", "flipped tag", "wrong ad", "wrong key", "wrong nonce", "truncated", "too short",
    ])
    func alteredVectorsFail(_ alteration: String) {
        var sealed = Self.ciphertext + Self.tag
        var key = Self.key
        var nonce = Self.nonce
        var ad = Self.associatedData
        switch alteration {
        case "flipped ciphertext": sealed[10] ^= 0x01
        case "flipped tag": sealed[sealed.count - 1] ^= 0x80
        case "wrong ad": ad[0] ^= 0x01
        case "wrong key": key[31] ^= 0x01
        case "wrong nonce": nonce[23] ^= 0x01
        case "truncated": sealed.removeLast()
        default: sealed = Array(sealed.prefix(15))
        }
        #expect {
            _ = try open(sealed, key: key, nonce: nonce, ad: ad)
        } throws: { ($0 as? VaultError)?.code == .integrityError }
    }
}
