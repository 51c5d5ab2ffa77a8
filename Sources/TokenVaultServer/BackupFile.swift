import Foundation
import TokenVaultCore

/// Where backups go by default and what they are called, for the daemon's `POST
/// /v1/admin/backup` and an offline `tokenvault backup` alike: `<data-dir>/backups/` (0700),
/// `vault-<time>.db`.
public enum BackupFile {
    public static func path(in directory: String, at time: Timestamp) -> String {
        directory + "/" + name(at: time)
    }

    public static func name(at time: Timestamp) -> String {
        "vault-" + time.description.replacingOccurrences(of: ":", with: "") + ".db"
    }

    /// The folder's name inside the data directory.
    public static let directoryName = "backups"

    public static func createDirectory(_ directory: String) throws {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw VaultError.storage("cannot create \(directory): \(error.localizedDescription)")
        }
    }
}
