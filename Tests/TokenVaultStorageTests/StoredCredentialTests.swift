import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultTesting

@testable import TokenVaultStorage

/// The vault over a real SQLite file: round trips, persistence, listing, audit.
@Suite struct StoredCredentialTests {
    let fixture: TestVault
    init() throws { fixture = try TestVault() }

    @Test func eachPayloadShapeRoundTripsAndSurvivesReopening() async throws {
        let samples = [
            ("tid", SamplePayloads.tinkoff()), ("rfc", SamplePayloads.oauth()), ("ebs", SamplePayloads.ebs()),
        ]
        for (name, sample) in samples {
            try await fixture.vault.put(
                try CredentialID("shapes/\(name)"), payload: try SamplePayloads.decode(sample.json), provider: name,
                labels: ["team": "payments"])
        }
        let (database, keyring) = try fixture.reopen(masterKey: fixture.masterKey)
        let reopened = Vault(store: database, sealer: keyring)
        for (name, sample) in samples {
            let credential = try await reopened.credential(try CredentialID("shapes/\(name)"))
            let secrets = credential.secrets
            let opened = [secrets.accessToken, secrets.refreshToken, secrets.idToken].compactMap { $0?.revealString() }
            #expect(Array(opened) == Array(sample.tokens.prefix(opened.count)))
            #expect(credential.metadata.labels == ["team": "payments"])
        }
        let rfc = try await reopened.credential(try CredentialID("shapes/rfc"))
        #expect(rfc.metadata.scopes == ["openid", "profile"])
        #expect(rfc.metadata.tokenType == "Bearer")
        #expect(rfc.metadata.subject == "user-1")
        #expect(rfc.secrets.extras?.revealString().contains("session_state") == true)
        #expect(rfc.metadata.expiresAt == fixture.clock.now.adding(seconds: 3600))
        let ebs = try await reopened.metadata(try CredentialID("shapes/ebs"))
        #expect(ebs.kind == .verifyToken && !ebs.hasRefreshToken && ebs.refreshAt == ebs.expiresAt)
    }

    @Test func listingPagesByCursorAndFilters() async throws {
        for namespace in ["a", "b"] {
            for index in 0..<5 {
                try await fixture.vault.put(
                    try CredentialID("\(namespace)/c\(index)"),
                    payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p")
            }
        }
        var query = CredentialQuery(limit: 3)
        var seen: [String] = []
        while true {
            let page = try await fixture.vault.list(query)
            seen += page.map(\.id.description)
            guard page.count == query.limit, let last = page.last else { break }
            query.after = last.id
        }
        #expect(seen == ["a/c0", "a/c1", "a/c2", "a/c3", "a/c4", "b/c0", "b/c1", "b/c2", "b/c3", "b/c4"])
        await #expect(try fixture.vault.list(CredentialQuery(namespace: "b")).count == 5)
        await #expect(try fixture.vault.list(CredentialQuery(status: .needsReauth)).isEmpty)
    }

    @Test func auditRowsAreWrittenWithTheChange() async throws {
        let id = try CredentialID("audit/x")
        let event = AuditEvent(
            at: fixture.clock.now, uid: 1000, gid: 1000, pid: 42, operation: .credentialPut, credentialID: id,
            outcome: .allowed)
        try await fixture.vault.put(
            id, payload: try SamplePayloads.decode(SamplePayloads.tinkoff().json), provider: "p", audit: event)
        let row = try fixture.database.withWriter { connection in
            try connection.statement(
                "SELECT actor_uid || ',' || operation || ',' || credential_id || ',' || outcome FROM audit_events"
            )
            .firstText()
        }
        #expect(row == "1000,credential.put,audit/x,allowed")
    }
}
