import Foundation
import Testing
import TokenVaultProviders
import TokenVaultTesting

@testable import TokenVaultServer

@Suite struct DaemonConfigurationTests {
    let directory = TemporaryDirectory()

    func load(_ json: String) throws -> DaemonConfiguration {
        let path = directory.file("config.json")
        writeFile(path, Data(json.utf8))
        return try DaemonConfiguration.load(path: path, catalog: ProviderKinds())
    }

    func error(_ json: String) -> String {
        do {
            _ = try load(json)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    /// The configuration reference (docs/configuration.md) names every setting the daemon reads,
    /// and the environment variable of each that has one.
    @Test func theReadmeDocumentsEverySetting() throws {
        let readme = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let table =
            DaemonConfiguration.integerSettings.map { ($0.key, $0.environment) }
            + DaemonConfiguration.flagSettings.map { ($0.key, $0.environment) }
        for (key, environment) in table {
            #expect(readme.contains("`\(key)`"), "docs/configuration.md does not document \(key)")
            if let environment {
                #expect(readme.contains("`\(environment)`"), "docs/configuration.md does not name \(environment)")
            }
        }
    }

    @Test func fullConfiguration() throws {
        let config = try load(
            """
            {"socket": {"path": "/run/tv/tv.sock", "mode": "0640", "group": "0"},
             "limits": {"max_body_bytes": 4096, "idle_timeout_seconds": 5},
             "server": {"event_loops": 3, "group_refresh_seconds": 5},
             "providers": ["tinkoff-id"],
             "access": [{"user": 1001, "namespaces": ["payments"], "permissions": ["token:read"]},
                        {"group": "root", "namespaces": ["*"], "permissions": ["credential:list", "admin"]}]}
            """)
        #expect(config.socketPath == "/run/tv/tv.sock")
        #expect(config.socketMode == 0o640)
        #expect(config.maximumBodySize == 4096 && config.idleTimeoutSeconds == 5)
        #expect(config.eventLoops == 3)
        #expect(config.groupRefreshSeconds == 5)
        #expect(config.providerNames == ["tinkoff-id"])
        #expect(config.rules.count == 2)
        #expect(config.rules[1].subject == .group(0))
        #expect(config.rules[1].permissions == [.credentialList, .admin])
    }

    /// `storage.*`: SQLite unless PostgreSQL is named with a URL; a password in the URL or a
    /// key that belongs to the other backend is refused naming the key, never echoing the URL.
    @Test func storageSection() throws {
        #expect(try load("{}").storage == StorageSettings())
        let shared = try load(
            """
            {"storage": {"backend": "postgres", "url": "postgres://tv@db.internal/tv?sslmode=verify-full",
                         "password_file": "/etc/tokenvault/db.password"}}
            """
        ).storage
        #expect(shared.backend == .postgres && shared.url == "postgres://tv@db.internal/tv?sslmode=verify-full")
        #expect(shared.passwordFile == "/etc/tokenvault/db.password")
        #expect(
            error(#"{"storage": {"backend": "postgres"}}"#).hasSuffix(
                "storage.url: is required with \"backend\": \"postgres\""))
        #expect(
            error(#"{"storage": {"backend": "mysql"}}"#).contains(
                "storage.backend: 'mysql' is not one of sqlite, postgres"))
        #expect(error(#"{"storage": {"url": "postgres://tv@db/tv"}}"#).contains("storage.url: is for"))
        #expect(
            error(#"{"storage": {"backend": "postgres", "url": "https://db/tv"}}"#).contains("storage.url: expected"))
        #expect(
            error(#"{"storage": {"backend": "postgres", "path": "/x"}}"#).contains(
                "storage.path: is not a known setting"))
        let withPassword = error(#"{"storage": {"backend": "postgres", "url": "postgres://tv:hunter2@db/tv"}}"#)
        #expect(withPassword.contains("storage.url: holds a password") && !withPassword.contains("hunter2"))
        #expect(try load("{}").storage.cacheBytes == nil, "the backend's default")
        #expect(try load(#"{"storage": {"cache_bytes": 0}}"#).storage.cacheBytes == 0)
        #expect(try load(#"{"storage": {"cache_bytes": 67108864}}"#).storage.cacheBytes == 64 << 20)
        for wrong in ["-1", "\"16M\"", "1.5"] {
            #expect(
                error(#"{"storage": {"cache_bytes": \#(wrong)}}"#).contains(
                    "storage.cache_bytes: expected a whole number of bytes"))
        }
    }

    @Test func emptyFileMeansDefaults() throws {
        let config = try load("{}")
        #expect(config.socketMode == 0o660 && config.maximumBodySize == 65536 && config.rules.isEmpty)
        #expect(config.eventLoops == DaemonConfiguration.defaultEventLoops)
        #expect(config.groupRefreshSeconds == 60)
        #expect((1...max(1, ProcessInfo.processInfo.activeProcessorCount)).contains(config.eventLoops))
    }

    @Test(arguments: [
        (
            #"{"access": [{"user": 1, "namespaces": ["a"], "permissions": ["token:write"]}]}"#,
            "access[0].permissions: 'token:write'"
        ),
        (#"{"access": [{"namespaces": ["a"], "permissions": []}]}"#, "access[0]: give exactly one"),
        (#"{"server": {"group_refresh_seconds": 0}}"#, "server.group_refresh_seconds: must be 1-86400"),
        (
            #"{"access": [{"user": "no-such-user-xyz", "namespaces": ["a"], "permissions": []}]}"#,
            "access[0].user: no user named"
        ),
        (#"{"access": [{"user": 1, "permissions": []}]}"#, "access[0].namespaces: is required"),
        (#"{"socket": {"mode": "0666"}}"#, "socket.mode: 0666 gives others access"),
        (#"{"socket": {"mode": "rw"}}"#, "socket.mode: 'rw' is not an octal"),
        (#"{"limits": {"max_body_bytes": "big"}}"#, "limits.max_body_bytes: expected an integer"),
        (#"{"limits": {"idle_timeout_seconds": 0}}"#, "limits.idle_timeout_seconds: must be 1-3600"),
        (#"{"server": {"event_loops": 0}}"#, "server.event_loops: must be 1-256"),
        ("{", "is not valid JSON"),
    ])
    func errorsNameTheFileAndTheKey(_ json: String, _ expected: String) {
        let message = error(json)
        #expect(message.contains(directory.file("config.json")), "\(message)")
        #expect(message.contains(expected), "\(message)")
    }

    @Test func environmentOverridesTheFile() throws {
        var config = try load(#"{"socket": {"mode": "0600"}}"#)
        try config.applyEnvironment([
            "TOKENVAULT_SOCKET_MODE": "0660", "TOKENVAULT_MAX_BODY_BYTES": "2048", "TOKENVAULT_PROVIDERS": "a, b",
            "TOKENVAULT_EVENT_LOOPS": "2",
        ])
        #expect(config.socketMode == 0o660 && config.maximumBodySize == 2048 && config.providerNames == ["a", "b"])
        #expect(config.eventLoops == 2)
        #expect(throws: ConfigurationError.self) { try config.applyEnvironment(["TOKENVAULT_SOCKET_MODE": "0666"]) }
        #expect(throws: ConfigurationError.self) { try config.applyEnvironment(["TOKENVAULT_EVENT_LOOPS": "0"]) }
    }
}
