import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultCrypto

/// The vault's DPoP keys: proofs an independent verifier accepts, one key per provider instance
/// that stays the same across restarts, `rotate-key` and rekey, and never written unsealed.
@Suite struct DPoPKeyTests {
    /// A keyring over memory: these tests run on the concurrency pool, and a vault file's
    /// migrations would hold a pool thread for every fsync (only the byte search needs a file).
    private static func keyring(
        _ store: InMemoryStore = InMemoryStore(), masterKey: SecretBytes = SodiumRandom.secret(count: 32),
        clock: FakeClock = FakeClock(Timestamp.now())
    ) throws -> Keyring {
        try Keyring.bootstrap(masterKey: masterKey, store: store, clock: clock)
    }

    @Test func proofsCarryWhatRFC9449AsksAndVerify() throws {
        let clock = FakeClock(Timestamp.now())
        let signer = try Self.keyring(clock: clock).signer(for: "bank")
        let verifier = DPoPVerifier(requiresNonce: false)
        let token = SecretBytes(utf8: "at-\(UUID().uuidString)")
        let url = "https://api.bank.example/v1/accounts"
        let proof = try signer.proof(method: "POST", url: url + "?page=2#x", accessToken: token, nonce: "n-1")
        #expect(
            verifier.check(proof: proof, method: "POST", url: url, accessToken: token.revealString())
                == .accepted(thumbprint: signer.thumbprint))
        let claims = DPoPVerifier.claims(of: proof)
        #expect(claims["htu"] as? String == url && claims["nonce"] as? String == "n-1")
        #expect(claims["iat"] as? Int == Int(clock.now.milliseconds / 1000))
        // The same proof a second time is a replay; a new one has a new jti.
        #expect(
            verifier.check(proof: proof, method: "POST", url: url, accessToken: token.revealString())
                != .accepted(thumbprint: signer.thumbprint))
        let next = try signer.proof(method: "POST", url: url, accessToken: token, nonce: nil)
        #expect(DPoPVerifier.claims(of: next)["jti"] as? String != claims["jti"] as? String)
        #expect(DPoPVerifier.claims(of: next)["nonce"] == nil)
        // Another method, URL or token does not pass with this proof.
        let strict = DPoPVerifier(requiresNonce: false)
        #expect(
            strict.check(proof: proof, method: "GET", url: url, accessToken: token.revealString())
                != .accepted(thumbprint: signer.thumbprint))
        #expect(
            strict.check(proof: proof, method: "POST", url: url + "/x", accessToken: token.revealString())
                != .accepted(thumbprint: signer.thumbprint))
        #expect(
            strict.check(proof: proof, method: "POST", url: url, accessToken: "other")
                != .accepted(thumbprint: signer.thumbprint))
        // A token request's proof has no ath.
        #expect(
            DPoPVerifier.claims(of: try signer.proof(method: "POST", url: url, accessToken: nil, nonce: nil))["ath"]
                == nil)
    }

    /// RFC 9449's own example key (section 4.2, figure 3) and the `jkt` it gives for it (section
    /// 6.1): the thumbprint is computed as the RFC computes it, by the signer and by the test
    /// servers' verifier alike.
    @Test func theThumbprintOfRFC9449sExampleKey() {
        let x = "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs"
        let y = "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA"
        #expect(DPoPKey.thumbprint(x: x, y: y) == "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
        #expect(DPoPVerifier.thumbprint(x: x, y: y) == "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I")
    }

    @Test func eachInstanceHasOneKeyThatOutlivesRestartsRotationAndRekey() throws {
        let store = InMemoryStore()
        let master = SodiumRandom.secret(count: 32)
        let keyring = try Self.keyring(store, masterKey: master)
        let bank = try keyring.signer(for: "bank").thumbprint
        #expect(try keyring.signer(for: "bank").thumbprint == bank)
        #expect(try keyring.signer(for: "other").thumbprint != bank)
        #expect(try Self.keyring().signer(for: "bank").thumbprint != bank, "another vault, another seed")

        // rotate-key: a new data key term; the seed is the master key's.
        _ = try keyring.addTerm()
        let restarted = try Keyring(masterKey: master, store: store)
        #expect(try restarted.signer(for: "bank").thumbprint == bank)
        // rekey: the seed is re-wrapped with the vault's other secrets.
        let newMaster = SodiumRandom.secret(count: 32)
        try restarted.rekey(to: newMaster, settings: [:])
        #expect(try Keyring(masterKey: newMaster, store: store).signer(for: "bank").thumbprint == bank)
    }

    @Test func neitherTheSeedNorAKeyIsWrittenUnsealed() async throws {
        let vault = try await offThePool { try TestVault() }
        let signer = try vault.keyring.signer(for: "bank")
        _ = try signer.proof(method: "POST", url: "https://bank.example/token", accessToken: nil, nonce: nil)
        let seed = try #require(vault.keyring.secret(.dpopSeed))
        var scalar = Keyring.derivedScalar(seed: seed, label: "tokenvault.dpop-key.v1", instance: "bank", counter: 0)
        defer { scalar.wipe() }
        #expect(try DPoPKey(scalar: scalar, clock: vault.clock).thumbprint == signer.thumbprint)
        let seedBytes = seed.withUnsafeBytes { Array($0) }
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        let base64URL = Data(scalar).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let needles: [[UInt8]] = [
            seedBytes, scalar, Array(hex(seedBytes).utf8), Array(hex(scalar).utf8), Array(base64URL.utf8),
        ]
        var searched = 0
        for path in [vault.databasePath, vault.databasePath + "-wal"] {
            let bytes = RawBytes.read(path)
            guard !bytes.isEmpty else { continue }
            searched += 1
            for needle in needles { #expect(!RawBytes.contains(bytes, needle), "\(path)") }
        }
        #expect(searched > 0)
        #expect(try vault.database.setting(WrappedSecret.dpopSeed.setting) != nil, "the seed is stored, sealed")
    }
}
