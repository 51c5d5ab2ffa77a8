import Foundation
import TokenVaultCore

/// Where the vault lives (`storage.*`): the embedded SQLite file in the data directory, or a
/// PostgreSQL database several daemons share. Only the shape is checked here; the URL's options
/// are read, and refused naming the option, when the database is opened.
public struct StorageSettings: Sendable, Equatable {
    public enum Backend: String, Sendable, CaseIterable {
        case sqlite
        case postgres
    }

    public var backend = Backend.sqlite
    /// libpq's URL form, without a password (`postgres` only).
    public var url: String?
    /// A file holding the PostgreSQL password (`postgres` only).
    public var passwordFile: String?
    /// How many bytes of sealed rows the daemon keeps in memory for token reads (0: none); nil
    /// is the backend's default (SQLite 16 MiB, PostgreSQL 100,000 rows).
    public var cacheBytes: Int?

    public init() {}

    static let keys: Set<String> = ["backend", "url", "password_file", "cache_bytes"]

    /// Reads the `storage` section; errors name the key.
    init(_ value: JSONValue, path: String) throws {
        func fail(_ key: String, _ problem: String) -> ConfigurationError {
            ConfigurationError(file: path, key: "storage." + key, problem: problem)
        }
        guard case .object(let members) = value else {
            throw ConfigurationError(file: path, key: "storage", problem: "expected an object")
        }
        if let unknown = Set(members.keys).subtracting(Self.keys).sorted().first {
            throw fail(unknown, "is not a known setting")
        }
        func string(_ key: String) throws -> String? {
            guard let member = members[key] else { return nil }
            guard case .string(let text) = member, !text.isEmpty else { throw fail(key, "expected a non-empty string") }
            return text
        }
        if let name = try string("backend") {
            guard let parsed = Backend(rawValue: name) else {
                throw fail(
                    "backend", "'\(name)' is not one of \(Backend.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            backend = parsed
        }
        url = try string("url")
        passwordFile = try string("password_file")
        if let member = members["cache_bytes"] {
            guard case .integer(let bytes) = member, (0...(Int64(1) << 40)).contains(bytes) else {
                throw fail("cache_bytes", "expected a whole number of bytes from 0 to \(Int64(1) << 40)")
            }
            cacheBytes = Int(bytes)
        }
        switch backend {
        case .sqlite:
            if url != nil || passwordFile != nil {
                throw fail(url != nil ? "url" : "password_file", "is for \"backend\": \"postgres\"")
            }
        case .postgres:
            guard let url else { throw fail("url", "is required with \"backend\": \"postgres\"") }
            guard let parsed = URLComponents(string: url), ["postgres", "postgresql"].contains(parsed.scheme) else {
                throw fail("url", "expected postgres://USER@HOST[:PORT]/DATABASE")
            }
            if parsed.password != nil {
                throw fail("url", "holds a password: put it in a file named by storage.password_file instead")
            }
        }
    }
}
