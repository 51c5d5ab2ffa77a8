import Foundation
import TokenVaultCore

/// Namespace for the migrations embedded at build time (see Plugins/EmbedMigrations).
public enum EmbeddedMigrations {
    /// The shipped migrations, in order, as embedded in this binary.
    public static func all() throws -> [Migration] { try decode(files) }

    /// PostgreSQL's migrations (`migrations/postgres/`), numbered on their own.
    public static func postgres() throws -> [Migration] { try decode(postgresFiles) }

    private static func decode(_ files: [(name: String, base64: String)]) throws -> [Migration] {
        try files.map { file in
            guard let data = Data(base64Encoded: file.base64) else {
                throw VaultError.migration("embedded migration \(file.name) is damaged")
            }
            return try Migration(fileName: file.name, sql: [UInt8](data))
        }
    }
}

/// One `migrations/NNNN_name.sql` file.
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let fileName: String
    public let sql: [UInt8]

    public init(fileName: String, sql: [UInt8]) throws {
        let stem = fileName.hasSuffix(".sql") ? String(fileName.dropLast(4)) : ""
        let parts = stem.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, parts[0].count == 4, let version = Int(parts[0]), version > 0,
            parts[1].allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "_" })
        else {
            throw VaultError.migration("migration file name \(fileName) is not of the form NNNN_name.sql")
        }
        self.version = version
        self.fileName = fileName
        self.sql = sql
    }
}
