import ArgumentParser
import Foundation
import TokenVaultCore
import TokenVaultCrypto

/// `tokenvault webhooks`: the outbox's deliveries still pending and those dead-lettered after
/// the retry period; `webhooks redeliver` sends dead-lettered ones again; `webhooks secret`
/// makes an endpoint's signing secret. Works on the database directly, daemon running or not.
struct WebhooksCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks",
        abstract: "List webhook deliveries that are pending or failed, redeliver failed ones, make a secret.",
        discussion: """
            Each event goes to each endpoint that wants it (webhooks.endpoints in the \
            configuration) and is retried with backoff for webhooks.retry_for_seconds; then it is \
            dead-lettered (failed) and stays until redelivered. A delivered event leaves no row.
            """,
        subcommands: [ListDeliveries.self, Redeliver.self, NewSecret.self], defaultSubcommand: ListDeliveries.self)

    struct ListDeliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List pending and failed deliveries, oldest first.")

        @OptionGroup var options: VaultOptions
        @Option(help: "Only deliveries in this state: pending or failed.") var state: String?
        @Option(help: "At most this many.") var limit = PageSize.standard
        @Flag(help: "Print JSON.") var json = false

        struct Row: Encodable {
            let id: Int64
            let endpoint: String
            let type: String
            let credential: String?
            let state: String
            let attempts: Int
            let created: String
            let next: String
            let lastError: String?
            let webhookID: String
            enum CodingKeys: String, CodingKey {
                case id, endpoint, type, credential, state, attempts, created = "created_at", next = "next_attempt_at"
                case lastError = "last_error", webhookID = "webhook_id"
            }
        }

        func run() async throws {
            try await reportingErrorsAsync {
                let wanted = try state.map { name in
                    guard let parsed = WebhookDelivery.State(rawValue: name) else {
                        throw ValidationError("--state must be pending or failed")
                    }
                    return parsed
                }
                let database = try OpenedVault.openBackend(options)
                defer { database.close() }
                let rows = try await database.webhookDeliveries(state: wanted, after: nil, limit: max(1, limit)).map {
                    Row(
                        id: $0.id, endpoint: $0.endpoint, type: $0.kind, credential: $0.credentialID?.description,
                        state: $0.state.rawValue, attempts: $0.attempts, created: "\($0.createdAt)",
                        next: "\($0.nextAttemptAt)", lastError: $0.lastError, webhookID: $0.messageID)
                }
                if json { return try printJSON(rows) }
                guard !rows.isEmpty else { return print("no webhook delivery is pending or failed") }
                for row in rows {
                    let about = row.credential.map { " " + TerminalText.safe($0) } ?? ""
                    let error = row.lastError.map { "  last error: " + TerminalText.safe($0) } ?? ""
                    let when = row.state == "failed" ? "" : "  next \(row.next)"
                    print(
                        "\(row.id)  \(row.state)  \(TerminalText.safe(row.endpoint))  \(row.type)\(about)  "
                            + "attempts \(row.attempts)\(when)\(error)")
                }
            }
        }
    }

    struct Redeliver: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "redeliver",
            abstract: "Send failed deliveries again, with the whole retry period ahead of them.")

        @OptionGroup var options: VaultOptions
        @Argument(help: "Ids as 'tokenvault webhooks' lists them.") var ids: [Int64] = []
        @Flag(help: "Every failed delivery.") var allFailed = false

        func validate() throws {
            guard ids.isEmpty == allFailed else { throw ValidationError("give delivery ids or --all-failed, not both") }
        }

        func run() async throws {
            try await reportingErrorsAsync {
                let database = try OpenedVault.openBackend(options)
                defer { database.close() }
                let count = try await database.redeliverWebhooks(ids: allFailed ? nil : ids)
                print("\(count) \(count == 1 ? "delivery" : "deliveries") queued again")
                if !allFailed && count < ids.count {
                    throw ValidationError("\(ids.count - count) of the ids given are not failed deliveries")
                }
            }
        }
    }

    struct NewSecret: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "secret",
            abstract: "Write a new signing secret (whsec_...) to a file only you can read.",
            discussion: """
                Give the same secret to the receiver, which verifies each delivery's \
                webhook-signature with it (Standard Webhooks), and name the file in the endpoint's \
                secret_file.
                """)

        @Argument(help: "The file to create (it must not exist).") var file: String

        func run() throws {
            try reportingErrors {
                let secret = WebhookSigner.newSecret()
                let descriptor = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
                guard descriptor >= 0 else {
                    throw VaultError.invalidField(
                        "file", "\(file) cannot be created: \(String(cString: strerror(errno)))")
                }
                defer { close(descriptor) }
                let written = secret.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                guard written == secret.count, write(descriptor, "\n", 1) == 1, fsync(descriptor) == 0 else {
                    throw VaultError.storage("\(file) could not be written")
                }
                print("wrote a new webhook secret to \(file)")
            }
        }
    }
}
