import ArgumentParser
import Foundation
import TokenVaultCore
import TokenVaultSystem

/// `tokenvault nodes`: the daemons sharing this vault and their heartbeats; `nodes forget NODE`
/// releases a dead node's refresh leases at once instead of after the lease period.
struct NodesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nodes",
        abstract: "List the nodes (daemons) sharing this vault, with their last heartbeat.",
        discussion: """
            Another node takes over a node's refresh attempts only after watching its heartbeat \
            stand still for limits.lease_seconds (default 300). A daemon on SQLite, which no other node \
            shares, beats once a lease period while idle. For a node that is gone for good, \
            'tokenvault nodes forget NODE' releases them at once.
            """,
        subcommands: [ListNodes.self, ForgetNode.self], defaultSubcommand: ListNodes.self)

    struct ListNodes: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List the nodes.")

        @OptionGroup var options: VaultOptions
        @Flag(help: "Print JSON.") var json = false

        struct Node: Encodable {
            let node: String
            let incarnation: String
            let beat: Int64
            let lastBeat: String
            let startedAt: String
            let host: String
            let pid: Int64
            /// The database's clock minus the node's, in seconds, as its last beat measured it
            /// (PostgreSQL); nil where it is not measured.
            let clockOffsetSeconds: Double?
            /// This data directory's node.
            let this: Bool
            enum CodingKeys: String, CodingKey {
                case node, incarnation, beat, lastBeat = "last_beat", startedAt = "started_at", host, pid, this
                case clockOffsetSeconds = "clock_offset_seconds"
            }
        }

        /// `1.2 s behind the database` / `0.3 s ahead of the database`.
        static func describe(offset: Double) -> String {
            let seconds = (abs(offset) * 10).rounded() / 10
            return "\(seconds) s " + (offset > 0 ? "behind the database" : "ahead of the database")
        }

        func run() async throws {
            try await reportingErrorsAsync {
                let database = try OpenedVault.openBackend(options)
                defer { database.close() }
                let this = NodeIdentity.existing(dataDirectory: options.resolvedDataDir)
                let nodes = try await database.nodes().map {
                    Node(
                        node: $0.node, incarnation: $0.incarnation, beat: $0.beat, lastBeat: "\($0.beatAt)",
                        startedAt: "\($0.startedAt)", host: $0.host, pid: $0.pid, clockOffsetSeconds: $0.clockOffset,
                        this: $0.node == this)
                }
                if json { return try printJSON(nodes) }
                guard !nodes.isEmpty else { return print("no node has beaten in this vault yet") }
                for node in nodes {
                    print(
                        "\(node.node)\(node.this ? " (this data directory)" : "")  host \(TerminalText.safe(node.host)) "
                            + "pid \(node.pid)  beat \(node.beat) at \(node.lastBeat)  running since \(node.startedAt)"
                            + (node.clockOffsetSeconds.map { "  clock \(Self.describe(offset: $0))" } ?? ""))
                }
            }
        }
    }

    struct ForgetNode: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Release the refresh leases of a node that is gone for good.",
            discussion: """
                Its row is removed and its open refresh attempts are handed to whichever node comes \
                first, which presents the same refresh token again. Only for a node that will not \
                come back: a node forgotten while alive has its answers refused (reported as \
                lease_taken_over) and the provider may revoke those grants.
                """)

        @OptionGroup var options: VaultOptions
        @Argument(help: "The node, as 'tokenvault nodes' lists it.") var node: String

        func run() async throws {
            try await reportingErrorsAsync {
                let database = try OpenedVault.openBackend(options)
                defer { database.close() }
                guard let released = try await database.forgetNode(node) else {
                    throw ValidationError("no node \(node) in this vault, and no attempt leased to it")
                }
                print("forgot node \(node): \(released) refresh attempt(s) released")
            }
        }
    }
}
