import ArgumentParser
import Foundation
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultServer

struct RekeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rekey",
        abstract: "Change the master key: re-wrap the data key terms only (credentials are not touched).",
        discussion: """
            With no option, a new key replaces the default key file: it is written to master.key.new, \
            the terms are re-wrapped in one durable transaction, then the file is renamed over master.key \
            (an interrupted rekey is finished on the next start). With --new-key-file or \
            --new-passphrase-file the vault moves to that source; point your configuration at it. \
            Backups taken before a rekey still need the old key. Refused while a daemon serves the \
            vault (it holds the old key): stop it, rekey, start it again. Data key rotation \
            (rotate-key) needs no stop.
            """)

    @OptionGroup var options: VaultOptions
    @Option(help: "Existing key file (mode 0600) that becomes the master key.") var newKeyFile: String?
    @Option(help: "Passphrase file; the vault becomes passphrase-protected (Argon2id).") var newPassphraseFile: String?
    @Option(help: "Argon2id cost with --new-passphrase-file: interactive, moderate or sensitive.")
    var kdfProfile: String = PassphraseKDF.Profile.moderate.rawValue

    func run() throws {
        try reportingErrors {
            guard newKeyFile == nil || newPassphraseFile == nil else {
                throw VaultError.invalidField("--new-key-file", "give either --new-key-file or --new-passphrase-file")
            }
            TokenVaultCommand.restrictFileCreation()
            try OpenedVault.requireVault(options)
            let lock: DatabaseLock
            do {
                lock = try DatabaseLock(databasePath: options.databasePath, role: "rekey")
            } catch let error as VaultError where error.code == .daemonRunning {
                throw VaultError(
                    code: .daemonRunning,
                    message: "\(error.message). A rekey must not run under a running daemon: it would keep "
                        + "wrapping new terms under the old key. Stop it (systemctl stop tokenvault.socket tokenvault.service, or SIGTERM), "
                        + "run rekey, start it again; rotating data keys needs no stop (tokenvault rotate-key, "
                        + "POST /v1/admin/rotate-key)")
            }
            defer { withExtendedLifetime(lock) {} }
            let opened = try OpenedVault.open(options)
            defer { opened.database.close() }
            if let newPassphraseFile {
                guard let profile = PassphraseKDF.Profile(rawValue: kdfProfile) else {
                    throw VaultError.invalidField("--kdf-profile", "must be interactive, moderate or sensitive")
                }
                let kdf = PassphraseKDF.generate(profile)
                let key = try kdf.deriveKey(from: try MasterKey.read(passphraseFile: newPassphraseFile))
                try opened.keyring.rekey(
                    to: key, settings: kdf.settings.merging([OpenedVault.keySourceSetting: "passphrase"]) { $1 })
                print("master key changed: the vault now opens with the passphrase in \(newPassphraseFile)")
            } else if let newKeyFile {
                let key = try MasterKey.read(keyFile: newKeyFile)
                try opened.keyring.rekey(to: key, settings: [OpenedVault.keySourceSetting: "file"])
                print("master key changed: the vault now opens with \(newKeyFile); pass it as --key-file")
            } else {
                try replaceDefaultKeyFile(opened)
            }
        }
    }

    private func replaceDefaultKeyFile(_ opened: OpenedVault) throws {
        let current = options.resolvedKeyFile
        guard opened.keyDescription == current.path, !current.explicit else {
            throw VaultError.invalidField(
                "--new-key-file", "this vault's key does not live in the default key file; give --new-key-file")
        }
        let pending = current.path + ".new"
        guard !FileManager.default.fileExists(atPath: pending) else {
            throw VaultError.keySource("\(pending) already exists (a rekey is in progress?); remove it or finish it")
        }
        let key = try MasterKey.create(keyFile: pending)
        do {
            try opened.keyring.rekey(to: key, settings: [OpenedVault.keySourceSetting: "file"])
        } catch {
            unlink(pending)
            throw error
        }
        guard rename(pending, current.path) == 0 else {
            throw VaultError.keySource(
                "terms re-wrapped under \(pending) but renaming it to \(current.path) failed; "
                    + "the next start finishes the rename")
        }
        print("master key changed: new key in \(current.path). Back it up; the old key only opens older backups.")
    }
}
