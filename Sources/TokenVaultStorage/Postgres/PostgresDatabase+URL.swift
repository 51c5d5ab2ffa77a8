import Foundation
import TokenVaultCore

extension PostgresDatabase.Configuration {
    /// Reads a libpq-style URL: `postgres://user@host:port/database?sslmode=…&sslrootcert=…`, or
    /// `postgres://user@/database?host=/run/postgresql&port=5432` for the server's socket
    /// directory.
    ///
    /// A password in the URL is refused: the URL sits in configuration files, argv and logs, so
    /// the password comes from a file instead (`password`). `sslmode` is `disable`, `require`
    /// (encrypted, certificate not checked) or `verify-full` (the default over TCP: certificate
    /// checked against `sslrootcert` and the host name); a socket is never encrypted.
    public init(url text: String, password: String?) throws {
        func invalid(_ why: String) -> VaultError { VaultError.invalidField("storage.url", why) }
        guard let components = URLComponents(string: text),
            let scheme = components.scheme, ["postgres", "postgresql"].contains(scheme)
        else { throw invalid("must be a postgres://user@host[:port]/database URL") }
        guard components.password == nil else {
            throw invalid("must not hold a password (it would show in argv and logs): use storage.password_file")
        }
        guard let username = components.user, !username.isEmpty else {
            throw invalid("must name the user (postgres://user@host/database)")
        }
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] {
            guard let value = item.value, query.updateValue(value, forKey: item.name) == nil else {
                throw invalid("parameter \(item.name) must be given once, with a value")
            }
        }
        let known: Set = ["sslmode", "sslrootcert", "host", "port", "readers", "writers"]
        if let unknown = query.keys.sorted().first(where: { !known.contains($0) }) {
            throw invalid("unknown parameter \(unknown) (known: \(known.sorted().joined(separator: ", ")))")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        guard !database.isEmpty, !database.contains("/") else { throw invalid("must name one database") }
        if components.port != nil, query["port"] != nil { throw invalid("give the port once") }
        guard let port = components.port ?? Int(query["port"] ?? "5432"), (1...65535).contains(port) else {
            throw invalid("port must be 1-65535")
        }
        let endpoint: Endpoint
        if let socketDirectory = query["host"] {
            guard socketDirectory.hasPrefix("/"), components.host?.isEmpty ?? true else {
                throw invalid("host= must be the server's socket directory, and then the URL has no host")
            }
            endpoint = .socket(path: "\(socketDirectory)/.s.PGSQL.\(port)")
        } else {
            guard let host = components.host, !host.isEmpty else { throw invalid("must name a host") }
            endpoint = .tcp(host: host, port: port)
        }
        let tls: TLS
        switch (query["sslmode"] ?? (endpoint.isSocket ? "disable" : "verify-full"), query["sslrootcert"]) {
        case ("disable", nil): tls = .disable
        case ("require", nil): tls = .require
        case ("verify-full", let caFile?): tls = .verifyFull(caFile: caFile)
        case ("verify-full", nil): throw invalid("sslmode=verify-full needs sslrootcert=/path/to/ca.pem")
        case (let mode, _) where !["disable", "require", "verify-full"].contains(mode):
            throw invalid("sslmode must be disable, require or verify-full")
        default: throw invalid("sslrootcert is only read with sslmode=verify-full")
        }
        if endpoint.isSocket, tls != .disable { throw invalid("a socket connection is not encrypted: drop sslmode") }
        self.init(endpoint: endpoint, username: username, password: password, database: database, tls: tls)
        if let readers = query["readers"] {
            guard let count = Int(readers), (1...64).contains(count) else { throw invalid("readers must be 1-64") }
            self.readers = count
        }
        if let writers = query["writers"] {
            guard let count = Int(writers), (1...64).contains(count) else { throw invalid("writers must be 1-64") }
            self.writers = count
        }
    }
}

extension PostgresDatabase.Configuration.Endpoint {
    var isSocket: Bool {
        if case .socket = self { return true }
        return false
    }
}
