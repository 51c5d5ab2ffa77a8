import Foundation
import Logging
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultSystem
import TokenVaultTesting

@testable import TokenVaultServer

/// SIGHUP's work, in-process: the rules on disk change and the reload puts them in force for a
/// connection opened before it; a file that does not validate leaves the running rules.
/// (The signal itself, with the built binary: SystemdTests.)
@Suite struct ConfigurationReloadTests {
    @Test func rulesChangeOnAnOpenConnectionAndABadFileKeepsTheRunningOnes() async throws {
        let me = getuid()
        let writeOnly = AccessPolicy(
            rules: [.init(subject: .user(me), namespaces: ["allowed"], permissions: [.credentialWrite])],
            daemonUID: me &+ 12345, rootIsAdmin: false)
        let server = try await TestServer(policy: writeOnly)
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let body = server.putBody(token: SamplePayloads.tinkoff().json)
            #expect(try await server.request("PUT", "/v1/credentials/allowed/a", body: body).status == 201)

            let file = server.fixture.directory.file("config.json")
            func writeRules(_ permissions: [String]) throws {
                let list = permissions.map { "\"\($0)\"" }.joined(separator: ", ")
                try Data(
                    """
                    {"//": "reload test", "access": [{"user": \(me), "namespaces": ["allowed"], "permissions": [\(list)]}],
                     "log": {"level": "debug"}}
                    """.utf8
                ).write(to: URL(fileURLWithPath: file))
            }
            try writeRules(["credential:write"])
            let levels = LogLevelSwitch(.info)
            let reload = ConfigurationReload(
                running: try DaemonConfiguration.load(path: file, catalog: ProviderKinds()),
                load: { try DaemonConfiguration.load(path: file, catalog: ProviderKinds()) }, api: server.api,
                levels: levels, notifier: SystemdNotifier(address: nil), status: { "test" },
                logger: Logger(label: "reload-test"))

            // Blocking socket calls run off the concurrency pool, which the in-process server needs.
            let connection = Connection(try UnixSocketConnection(path: server.socketPath))
            func read() async throws -> Int {
                try await offThePool {
                    try connection.value.send("GET /v1/credentials/allowed/a/token HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    guard let response = try connection.value.readResponse() else {
                        throw SocketTestError("connection closed")
                    }
                    return response.status
                }
            }
            #expect(try await read() == 403)

            try writeRules(["credential:write", "token:read"])
            #expect(await reload.reload() == .init(refusal: nil, needsRestart: []))
            #expect(try await read() == 200, "denied before the reload, allowed after, on the same connection")
            #expect(levels.level == .debug)

            try Data(#"{"access": [{"user": 0, "namespaces": [], "permissions": ["token:read"]}]}"#.utf8)
                .write(to: URL(fileURLWithPath: file))
            let refused = await reload.reload()
            #expect(refused.refusal?.contains("access[0].namespaces") == true, "\(refused)")
            #expect(refused.refusal?.contains(file) == true)
            #expect(try await read() == 200, "a file that does not validate leaves the running rules")

            try Data(#"{"access": [{"user": 0, "namespaces": ["x"], "permissions": ["token:read"]}], "#.utf8)
                .write(to: URL(fileURLWithPath: file))
            #expect(await reload.reload().refusal?.contains("is not valid JSON") == true)
            #expect(try await read() == 200)

            try writeRules(["credential:write"])
            #expect(await reload.reload().refusal == nil)
            #expect(try await read() == 403, "allowed before the reload, denied after, on the same connection")
        }
    }

    /// An open watch stream is judged by the rules in force at each event: a reload that takes
    /// `credential:list` away ends it at the next change.
    @Test func aReloadThatTakesThePermissionAwayEndsAnOpenStream() async throws {
        let me = getuid()
        let lister = AccessPolicy(
            rules: [
                .init(subject: .user(me), namespaces: ["allowed"], permissions: [.credentialWrite, .credentialList])
            ],
            daemonUID: me &+ 12345, rootIsAdmin: false)
        let server = try await TestServer(policy: lister)
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let body = server.putBody(token: SamplePayloads.tinkoff().json)
            #expect(try await server.request("PUT", "/v1/credentials/allowed/a", body: body).status == 201)
            let file = server.fixture.directory.file("config.json")
            try Data(
                #"{"access": [{"user": \#(me), "namespaces": ["allowed"], "permissions": ["credential:write"]}]}"#.utf8
            ).write(to: URL(fileURLWithPath: file))
            let reload = ConfigurationReload(
                running: try DaemonConfiguration.load(path: file, catalog: ProviderKinds()),
                load: { try DaemonConfiguration.load(path: file, catalog: ProviderKinds()) }, api: server.api,
                levels: LogLevelSwitch(.info), notifier: SystemdNotifier(address: nil), status: { "test" },
                logger: Logger(label: "reload-test"))

            let connection = Connection(try UnixSocketConnection(path: server.socketPath))
            let first = try await offThePool {
                try connection.value.send("GET /v1/credentials/allowed/a/watch HTTP/1.1\r\nHost: localhost\r\n\r\n")
                return try connection.value.readResponse(timeout: 10, firstLine: true)
            }
            #expect(first?.status == 200 && first?.text.contains("allowed/a") == true)

            #expect(await reload.reload().refusal == nil)
            let changed = server.putBody(token: SamplePayloads.tinkoff().json, labels: #"{"v": "2"}"#)
            #expect(try await server.request("PUT", "/v1/credentials/allowed/a", body: changed).status == 200)
            let ended = try await offThePool { try connection.value.skip(through: "0\r\n\r\n", timeout: 10) }
            #expect(ended, "the stream ended")
        }
    }

    /// A caller removed from the group that gave it `credential:list` loses its open stream at the
    /// next heartbeat once its groups are read again (here every 0.2 s), without any change to the
    /// credential or the rules. (Streams judged every event by the groups read when they opened.)
    @Test func aCallerRemovedFromTheGroupThatGaveTheRightLosesItsStream() async throws {
        let me = getuid()
        let group: UInt32 = 4_000_123
        let membership = Membership()
        let policy = AccessPolicy(
            rules: [
                .init(subject: .group(group), namespaces: ["team"], permissions: [.credentialWrite, .credentialList])
            ],
            daemonUID: me &+ 12345, rootIsAdmin: false)
        let server = try await TestServer(
            policy: policy,
            configure: { options in
                options.groupRefreshSeconds = 0.2
                options.connections.streamHeartbeatSeconds = 1
                options.groupLookUp = { _, primary in membership.isMember ? [primary, group] : [primary] }
            })
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let body = server.putBody(token: SamplePayloads.tinkoff().json)
            #expect(try await server.request("PUT", "/v1/credentials/team/a", body: body).status == 201)
            for target in ["/v1/credentials/team/a/watch", "/v1/events"] {
                membership.set(true)
                // Until the groups remembered without the group (for 0.2 s) are read again.
                try await Task.sleep(for: .milliseconds(300))
                let connection = Connection(try UnixSocketConnection(path: server.socketPath))
                let first = try await offThePool {
                    try connection.value.send("GET \(target) HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    return try connection.value.readResponse(timeout: 10, firstLine: true)
                }
                #expect(first?.status == 200, "\(target): \(first?.text ?? "no answer")")
                // Still a member: the stream stays open across heartbeats.
                // (Waiting out the 2.5 s ends as a timeout: nothing more than heartbeats came.)
                let endedEarly =
                    (try? await offThePool { try connection.value.skip(through: "0\r\n\r\n", timeout: 2.5) }) ?? false
                #expect(!endedEarly, "\(target) ended while the caller was still in the group")
                membership.set(false)
                let ended = try await offThePool { try connection.value.skip(through: "0\r\n\r\n", timeout: 10) }
                #expect(ended, "\(target) went on after the caller left the group")
            }
        }
    }

    /// The instances of the file go to the engine whole (limits, planners and endpoints alike);
    /// without an engine to take them, a changed instance waits for a restart.
    @Test func providerChangesGoToTheEngineOrWaitWithoutOne() async throws {
        let directory = TemporaryDirectory("tokenvault-reload")
        let file = directory.file("config.json")
        func write(endpoint: String, concurrency: Int) throws {
            try Data(
                """
                {"providers": {"acme": {"kind": "oauth2", "token_endpoint": "\(endpoint)", "client_id": "vault",
                  "limits": {"concurrency": \(concurrency)}}}}
                """.utf8
            ).write(to: URL(fileURLWithPath: file))
        }
        try write(endpoint: "https://id.example/token", concurrency: 4)
        let routing = RecordingRouting()
        let server = try DaemonConfiguration.load(path: file, catalog: ProviderKinds())
        let load: @Sendable () throws -> DaemonConfiguration = {
            try DaemonConfiguration.load(path: file, catalog: ProviderKinds())
        }
        let reload = ConfigurationReload(
            running: server, load: load, api: try makeAPI(directory), levels: LogLevelSwitch(.info),
            notifier: SystemdNotifier(address: nil), status: { "test" },
            providers: .init(builder: ProviderInstances(environment: [:]), routing: routing),
            logger: Logger(label: "reload-test"))

        try write(endpoint: "https://id.example/token", concurrency: 2)
        #expect(await reload.reload() == .init(refusal: nil, needsRestart: []))
        #expect(routing.last?.settings["acme"]?.limits.concurrency == 2)
        try write(endpoint: "https://other.example/token", concurrency: 2)
        #expect(await reload.reload() == .init(refusal: nil, needsRestart: []))
        #expect(routing.last?.settings["acme"]?.options["token_endpoint"] == .string("https://other.example/token"))
        #expect(routing.last?.providers.keys.sorted() == ["acme"])
        #expect(await reload.reload() == .init(refusal: nil, needsRestart: []))
        #expect(routing.count == 2, "an unchanged file replaces nothing")

        let unwired = ConfigurationReload(
            running: server, load: load, api: try makeAPI(directory), levels: LogLevelSwitch(.info),
            notifier: SystemdNotifier(address: nil), status: { "test" }, logger: Logger(label: "reload-test"))
        #expect(await unwired.reload() == .init(refusal: nil, needsRestart: ["providers"]))
        await ProviderTable.shutdown(routing.all)
    }

    func makeAPI(_ directory: TemporaryDirectory) throws -> VaultAPI {
        let fixture = try TestVault()
        return VaultAPI(
            vault: fixture.vault, admin: fixture.database, rotation: nil,
            policy: AccessPolicy(rules: [], daemonUID: getuid()),
            audit: AuditRecorder(vault: fixture.vault, logger: Logger(label: "test")),
            options: .init(version: "test", backupDirectory: directory.file("backups")))
    }

    @Test func settingsOnlyARestartAppliesAreNamed() throws {
        let directory = TemporaryDirectory("tokenvault-reload")
        let file = directory.file("config.json")
        try Data(#"{"socket": {"mode": "0660"}, "limits": {"max_body_bytes": 65536}}"#.utf8)
            .write(to: URL(fileURLWithPath: file))
        let before = try DaemonConfiguration.load(path: file, catalog: ProviderKinds())
        try Data(#"{"socket": {"mode": "0600"}, "limits": {"max_body_bytes": 1024}, "log": {"format": "json"}}"#.utf8)
            .write(to: URL(fileURLWithPath: file))
        let after = try DaemonConfiguration.load(path: file, catalog: ProviderKinds())
        #expect(ConfigurationReload.sectionsNeedingRestart(before, after) == ["socket", "limits", "log.format"])
        // limits.on_demand_refresh_seconds is named by the section its key is in.
        var onDemand = before
        onDemand.onDemandRefreshSeconds += 1
        #expect(ConfigurationReload.sectionsNeedingRestart(before, onDemand) == ["limits"])
    }
}

/// A test's socket connection, used from one blocking call at a time.
private final class Connection: @unchecked Sendable {
    let value: UnixSocketConnection
    init(_ value: UnixSocketConnection) { self.value = value }
}

/// Records the tables a reload puts in force.
private final class RecordingRouting: ProviderRouting, @unchecked Sendable {
    private let lock = NSLock()
    private var tables: [ProviderTable] = []

    var last: (providers: [String: any TokenProvider], settings: [String: ProviderSettings])? {
        lock.withLock { tables.last.map { ($0.providers, $0.settings) } }
    }
    var count: Int { lock.withLock { tables.count } }
    /// Every provider object it was given.
    var all: [any TokenProvider] { lock.withLock { tables.flatMap { $0.providers.values } } }

    var providerTable: ProviderTable { lock.withLock { tables.last ?? .empty } }

    func install(_ table: ProviderTable) -> ProviderReplacement {
        lock.withLock { tables.append(table) }
        return ProviderReplacement()
    }
}

/// Whether the test's caller is in the group, as the user database would say.
private final class Membership: Sendable {
    private let member = Mutex(true)
    var isMember: Bool { member.withLock { $0 } }
    func set(_ value: Bool) { member.withLock { $0 = value } }
}
