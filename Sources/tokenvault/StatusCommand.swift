import ArgumentParser
import Foundation
import TokenVaultClient

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract:
            "The daemon at a glance: up, version, uptime, backend, credentials by status, next refresh, providers, audit.",
        discussion: """
            Asks the running daemon (GET /v1/admin/status, which needs the admin permission). \
            Exit code 0 when it is up and healthy, 2 when it is up but degraded (see its providers and \
            database lines), 5 when no daemon answers on the socket.
            """)

    @OptionGroup var client: ClientOptions

    /// What `--json` prints when no daemon answers.
    struct Down: Encodable {
        let up = false
        let socket: String
        let error: String
    }

    func run() async throws {
        let socket = client.socketPath
        let outcome = await callDaemon(at: socket) { try await $0.status() }
        let status: DaemonStatus
        switch outcome {
        case .success(let answered): status = answered
        case .failure(let error as TokenVaultClientError):
            if case .daemonUnreachable = error {
                if client.json {
                    try printJSON(Down(socket: socket, error: error.description))
                } else {
                    print("daemon: down (nothing answers on \(socket))")
                }
            } else {
                TerminalText.error("tokenvault: error: \(error.description)")
            }
            throw ExitCode(ClientOptions.exitCode(for: error))
        case .failure(let error): throw error
        }
        if client.json {
            try printJSON(status)
        } else {
            Self.printText(status, socket: socket)
        }
        if status.health.status != "ok" { throw ExitCode(2) }
    }

    static func printText(_ status: DaemonStatus, socket: String) {
        let health = status.health
        let database = health.database
        print(
            "daemon:        up (\(health.status)), version \(health.version), uptime \(duration(health.uptimeSeconds))")
        print("socket:        \(socket)")
        print(
            "database:      \(database?.backend ?? "sqlite"), "
                + (database?.reachable == false
                    ? "NOT REACHABLE" : "schema \(database?.schemaVersion.map(String.init) ?? "?")"))
        if let replication = database?.replication {
            print("replication:   " + Self.replicationLine(replication))
        }
        if let credentials = status.credentials {
            let total = credentials.values.reduce(0, +)
            let parts = credentials.keys.sorted().filter { credentials[$0]! > 0 }.map { "\($0) \(credentials[$0]!)" }
            print("credentials:   \(total)" + (parts.isEmpty ? "" : " (" + parts.joined(separator: ", ") + ")"))
        } else {
            print("credentials:   unknown (the database does not answer)")
        }
        print("next refresh:  \(status.nextRefreshAt ?? "none scheduled")")
        print(
            "audit:         \(status.audit.rows.map { "\($0) rows" } ?? "unknown"), \(status.audit.pending) pending, "
                + "\(status.audit.writeFailures) write failures")
        let providers = health.providers ?? []
        guard !providers.isEmpty else { return print("providers:     none") }
        print("providers:")
        printTable(
            ["  NAME", "KIND", "CONDITION", "DETAIL"],
            providers.map { ["  " + $0.name, $0.kind, $0.condition, $0.detail ?? ""] })
    }

    /// The standbys and timeline, with a warning when a failover can lose commits.
    static func replicationLine(_ replication: Health.Replication) -> String {
        let timeline = replication.timeline.map { ", timeline \($0)" } ?? ""
        if let hold = replication.hold { return "FAILOVER\(timeline): \(hold)" }
        guard replication.standbys > 0 else { return "no standby streams from the server\(timeline)" }
        let standbys = replication.standbys == 1 ? "1 standby" : "\(replication.standbys) standbys"
        guard !replication.synchronous else { return "synchronous, \(standbys)\(timeline)" }
        return "WARNING: asynchronous, \(standbys)\(timeline): a failover can lose the last commits; the nodes "
            + "keep theirs and re-apply them (limits.retain_answers_seconds), or set synchronous_standby_names "
            + "(docs/scale-out.md, \"Failover\")"
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds)
        let (days, hours, minutes) = (total / 86_400, total % 86_400 / 3600, total % 3600 / 60)
        if days > 0 { return "\(days)d \(hours)h" }
        if hours > 0 { return "\(hours)h \(minutes)m" }
        return minutes > 0 ? "\(minutes)m \(total % 60)s" : "\(total)s"
    }
}
