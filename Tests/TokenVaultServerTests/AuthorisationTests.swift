import Foundation
import Testing
import TokenVaultCore
import TokenVaultServer
import TokenVaultTesting

/// Denials in-process: the test runs as root, so root's admin rights are turned off and the
/// daemon uid is set to someone else; the rules then decide for our own uid.
@Suite struct AuthorisationTests {
    @Test func ruleGrantsOneNamespaceAndEveryDecisionIsAudited() async throws {
        let me = getuid()
        let server = try await TestServer(policy: TestServer.policyAllowingOnlyNamespaceAllowed())
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let body = server.putBody(token: SamplePayloads.tinkoff().json)
            #expect(try await server.request("PUT", "/v1/credentials/allowed/a", body: body).status == 201)
            let denied = try await server.request("PUT", "/v1/credentials/other/a", body: body)
            #expect(denied.status == 403)
            #expect(denied.json()["code"] as? String == "forbidden")
            #expect(denied.json()["permission"] as? String == "credential:write")
            #expect(try await server.request("GET", "/v1/credentials/allowed/a/token").status == 200)
            #expect(
                try await server.request("GET", "/v1/credentials/allowed/a").status == 403, "no credential:list rule")
            #expect(try await server.request("GET", "/v1/credentials").status == 403)
            #expect(try await server.request("POST", "/v1/admin/rotate-key").status == 403)

            await server.audit.flush()
            let rows = try await server.fixture.database.auditEvents(after: nil, credentialID: nil, limit: 100)
            let summary = rows.map {
                "\($0.event.operation) \($0.event.credentialID?.description ?? "-") \($0.event.outcome.rawValue)"
            }
            #expect(summary.contains("credential.put allowed/a allowed"))
            #expect(summary.contains("credential.put other/a denied"))
            #expect(summary.contains("token.read allowed/a allowed"))
            #expect(summary.contains("admin.rotate_key - denied"))
            #expect(rows.allSatisfy { $0.event.uid == me && $0.event.pid == getpid() })
        }
    }

    /// A put that keeps a token derived from another credential needs what the caller's own
    /// exchange of it would: `token:exchange` in the subject's namespace, besides
    /// `credential:write` where it is stored. Refused before anything is read or sent.
    @Test func aDerivedCredentialNeedsTheRightToExchangeItsSubject() async throws {
        let server = try await TestServer(policy: TestServer.policyAllowingOnlyNamespaceAllowed())
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let body =
                #"{"provider": "tinkoff-id", "grant": {"type": "token_exchange", "subject": "other/person", "scopes": ["a"]}}"#
            let denied = try await server.request("PUT", "/v1/credentials/allowed/derived", body: body)
            #expect(denied.status == 403, "\(denied.text)")
            #expect(denied.json()["permission"] as? String == "token:exchange")
            // Within its own namespace the subject is only looked for (and is not there).
            let own = try await server.request(
                "PUT", "/v1/credentials/allowed/derived",
                body:
                    #"{"provider": "tinkoff-id", "grant": {"type": "token_exchange", "subject": "allowed/person", "scopes": ["a"]}}"#
            )
            #expect(own.status == 400 && own.json()["field"] as? String == "grant.subject", "\(own.text)")
        }
    }
}
