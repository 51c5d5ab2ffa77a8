import Foundation
import TokenVaultClient

/// How the client commands print daemon answers: tables for people, JSON for scripts.
enum ClientOutput {
    static func metadata(_ metadata: TokenVaultClient.Metadata, json asJSON: Bool) throws {
        if asJSON { return try printJSON(metadata) }
        let rows: [(String, String?)] = [
            ("id", metadata.id), ("provider", metadata.provider), ("kind", metadata.kind), ("status", metadata.status),
            ("generation", String(metadata.generation)), ("subject", metadata.subject),
            ("token type", metadata.tokenType), ("scopes", metadata.scopes.joined(separator: " ")),
            ("labels", metadata.labels.sorted { $0.key < $1.key }.map { "\($0)=\($1)" }.joined(separator: ",")),
            ("issued at", metadata.issuedAt), ("expires at", metadata.expiresAt ?? "unknown"),
            ("refresh at", metadata.refreshAt ?? "never"),
            ("refresh token", metadata.hasRefreshToken ? "stored" : "none"),
            (
                "grant",
                metadata.grant.map { grant in
                    ([grant.type] + (grant.subject.map { ["subject=\($0)"] } ?? [])
                        + grant.scopes.map { "scope=\($0)" } + grant.audience.map { "audience=\($0)" }
                        + grant.resource.map { "resource=\($0)" }
                        + (grant.requestedTokenType.map { ["requested_token_type=\($0)"] } ?? []))
                        .joined(separator: " ")
                }
            ),
            ("id token", metadata.hasIDToken ? "stored" : "none"),
            ("last error", metadata.lastError.map { "\($0.code): \($0.message) (at \($0.at))" }),
            ("failures", metadata.refreshFailures.flatMap { $0 > 0 ? String($0) : nil }),
            (
                "held commit",
                metadata.pendingCommit.map {
                    "new tokens held since \($0.since), \($0.failures) failed commit(s), next try \($0.nextAttemptAt): "
                        + $0.lastError
                }
            ),
        ]
        printTable(["field", "value"], rows.compactMap { key, value in value.map { [key, $0] } })
    }
}

extension TokenVaultClient {
    /// The client's metadata model (the bare name clashes with TokenVaultCore's).
    typealias Metadata = TokenVaultClient::CredentialMetadata
}
