import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultTesting

@Suite struct MasterKeyTests {
    let directory = TemporaryDirectory()

    func write(_ name: String, _ bytes: [UInt8], mode: Int) -> String {
        let path = directory.file(name)
        writeFile(path, Data(bytes), permissions: mode)
        return path
    }

    @Test func createdKeyFileIsPrivateAndReadsBack() throws {
        let path = directory.file("master.key")
        let key = try MasterKey.create(keyFile: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try MasterKey.read(keyFile: path) == key)
        #expect(throws: VaultError.self) { try MasterKey.create(keyFile: path) }
    }

    @Test(arguments: [0o644, 0o640, 0o604, 0o660])
    func groupOrOtherReadableKeyFileIsRefused(_ mode: Int) {
        let path = write("open.key", Array(repeating: 7, count: 32), mode: mode)
        #expect {
            _ = try MasterKey.read(keyFile: path)
        } throws: { error in
            let message = (error as! VaultError).message
            return message.contains(path) && message.contains("chmod 600 \(path)")
        }
    }

    @Test(arguments: [0o600, 0o400])
    func ownerOnlyKeyFileIsAccepted(_ mode: Int) throws {
        let path = write("ok.key", Array(repeating: 7, count: 32), mode: mode)
        #expect(try MasterKey.read(keyFile: path) == SecretBytes(Array(repeating: 7, count: 32)))
    }

    @Test func hexKeyFileWithNewlineIsAccepted() throws {
        let path = write("hex.key", Array((String(repeating: "ab", count: 32) + "\n").utf8), mode: 0o600)
        #expect(try MasterKey.read(keyFile: path) == SecretBytes(Array(repeating: 0xab, count: 32)))
    }

    @Test(arguments: [
        (Array(repeating: UInt8(1), count: 31), "holds 31 bytes"),
        (Array(repeating: UInt8(0x7a), count: 64), "not all hexadecimal"),
        (Array(repeating: UInt8(1), count: 200), "at most 128"),
    ])
    func malformedKeyFilesAreRefused(_ contents: [UInt8], _ reason: String) {
        let path = write("bad.key", contents, mode: 0o600)
        #expect {
            _ = try MasterKey.read(keyFile: path)
        } throws: { ($0 as! VaultError).message.contains(reason) }
    }

    @Test func missingKeyFileIsNamed() {
        #expect {
            _ = try MasterKey.read(keyFile: directory.file("absent.key"))
        } throws: { ($0 as! VaultError).message.contains("absent.key") }
    }

    @Test func argon2idDerivationIsDeterministicPerSalt() throws {
        let path = write("pass", Array("correct horse battery staple\n".utf8), mode: 0o600)
        let passphrase = try MasterKey.read(passphraseFile: path)
        #expect(passphrase.revealString() == "correct horse battery staple")
        let kdf = PassphraseKDF.generate(.interactive)
        let key = try kdf.deriveKey(from: passphrase)
        #expect(key.count == 32)
        #expect(try kdf.deriveKey(from: passphrase) == key)
        #expect(try kdf.deriveKey(from: SecretBytes(utf8: "correct horse battery stapler")) != key)
        #expect(try PassphraseKDF.generate(.interactive).deriveKey(from: passphrase) != key)
        let restored = try PassphraseKDF(settings: kdf.settings.mapValues { Optional($0) })
        #expect(restored == kdf)
    }

    @Test func shortOrOpenPassphraseFilesAreRefused() {
        let short = write("short", Array("abc".utf8), mode: 0o600)
        #expect(throws: VaultError.self) { _ = try MasterKey.read(passphraseFile: short) }
        let open = write("open", Array("long enough passphrase".utf8), mode: 0o644)
        #expect(throws: VaultError.self) { _ = try MasterKey.read(passphraseFile: open) }
    }
}
