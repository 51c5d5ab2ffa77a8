import Foundation
import Testing

@testable import TokenVaultClient

/// Decoding the documents of docs/openapi.yaml, redaction, and URL encoding; no daemon needed.
@Suite("Models")
struct ModelTests {
    @Test func metadataDecodesEveryMember() throws {
        let json = """
            {"id":"payments/alice","namespace":"payments","name":"alice","provider":"tinkoff-id","kind":"oauth2",
             "subject":"example-user","status":"failing","generation":3,"token_type":"Bearer",
             "scopes":["openid","profile"],"labels":{"env":"dev"},"issued_at":"2026-11-22T03:37:05.123Z",
             "expires_at":"2026-11-22T04:07:05.123Z","refresh_at":"2026-11-22T04:01:05.123Z",
             "refresh_token_expires_at":"2026-12-22T03:37:05.123Z","has_refresh_token":true,"has_id_token":true,
             "last_error":{"code":"provider_unavailable","message":"timed out","at":"2026-11-22T04:01:15.000Z"},
             "created_at":"2026-11-01T09:00:00.000Z","updated_at":"2026-11-22T03:37:05.123Z",
             "grant":{"audience":["https://api.example"],"requested_token_type":"urn:ietf:params:oauth:token-type:jwt",
              "resource":[],"scopes":["read"],"subject":"payments/bob","type":"token_exchange"}}
            """
        let metadata = try JSONDecoder().decode(CredentialMetadata.self, from: Data(json.utf8))
        #expect(metadata.generation == 3)
        #expect(metadata.grant?.subject == "payments/bob" && metadata.grant?.audience == ["https://api.example"])
        #expect(metadata.grant?.requestedTokenType == "urn:ietf:params:oauth:token-type:jwt")
        #expect(metadata.refreshTokenExpiresAt == "2026-12-22T03:37:05.123Z")
        #expect(metadata.hasIDToken)
        #expect(metadata.lastError?.code == "provider_unavailable")
        let expiry = try #require(CredentialMetadata.date(metadata.expiresAt ?? ""))
        #expect(abs(expiry.timeIntervalSince1970 - 1_795_320_425.123) < 0.000_5)
        #expect(CredentialMetadata.date("2026-11-22T04:07:05Z") != nil)
        #expect(CredentialMetadata.date("yesterday") == nil)
    }

    @Test func optionalMembersMayBeAbsentOrNull() throws {
        let json = """
            {"items":[{"id":"payments/ebs-check","namespace":"payments","name":"ebs-check","provider":"ebs",
             "kind":"verify_token","status":"expired","generation":1,"scopes":[],"labels":{},
             "issued_at":"2026-11-21T10:00:00.000Z","expires_at":null,"subject":null,"has_refresh_token":false,
             "has_id_token":false,"created_at":"2026-11-21T10:00:00.000Z","updated_at":"2026-11-21T10:00:00.000Z"}],
             "next_cursor":null}
            """
        let page = try JSONDecoder().decode(CredentialPage.self, from: Data(json.utf8))
        #expect(page.nextCursor == nil)
        #expect(page.items.first?.expiresAt == nil)
        #expect(page.items.first?.tokenType == nil)
        #expect(page.items.first?.lastError == nil)
    }

    @Test func adminDocumentsDecode() throws {
        let audit = """
            {"items":[{"id":4711,"at":"2026-11-22T04:07:05.123Z","uid":1001,"gid":1001,"pid":31337,
             "operation":"token.read","credential_id":"payments/alice","outcome":"allowed"},
             {"id":4709,"at":"2026-11-22T04:06:00.000Z","operation":"admin.rotate_key","outcome":"succeeded"}],
             "next_cursor":"eyJiZWZvcmUiOjQ3MTB9"}
            """
        let page = try JSONDecoder().decode(AuditPage.self, from: Data(audit.utf8))
        #expect(page.items.map(\.id) == [4711, 4709])
        #expect(page.items[0].credentialID == "payments/alice")
        #expect(page.items[1].uid == nil)
        #expect(page.nextCursor == "eyJiZWZvcmUiOjQ3MTB9")

        let rotated = try JSONDecoder().decode(
            RotateKeyResult.self,
            from: Data(#"{"new_term":3,"resealed":10000,"removed_terms":[2],"remaining_terms":[3]}"#.utf8))
        #expect(rotated.newTerm == 3 && rotated.resealed == 10000 && rotated.removedTerms == [2])
        #expect(rotated.remainingTerms == [3])
        let withoutRemaining = try JSONDecoder().decode(
            RotateKeyResult.self, from: Data(#"{"new_term":4,"resealed":0,"removed_terms":[]}"#.utf8))
        #expect(withoutRemaining.remainingTerms.isEmpty)

        let backup = try JSONDecoder().decode(
            BackupResult.self, from: Data(#"{"path":"/var/lib/tokenvault/backups/v.db","bytes":5242880}"#.utf8))
        #expect(backup.bytes == 5_242_880)

        let health = try JSONDecoder().decode(
            Health.self,
            from: Data(
                #"{"status":"ok","version":"0.3.0","database":{"schema_version":1},"uptime_seconds":86400.5}"#.utf8))
        #expect(health.database?.schemaVersion == 1)
        #expect(health.uptimeSeconds == 86400.5)
    }

    @Test func accessTokenNeverPrintsItsValues() throws {
        let json =
            #"{"access_token":"at-SECRET","token_type":"Bearer","expires_at":"2026-11-22T04:07:05.123Z","id_token":"id-SECRET"}"#
        let token = try JSONDecoder().decode(AccessToken.self, from: Data(json.utf8))
        #expect(token.accessToken == "at-SECRET")
        var dumped = ""
        dump(token, to: &dumped)
        for text in ["\(token)", String(describing: token), String(reflecting: token), dumped] {
            #expect(!text.contains("SECRET"), "\(text)")
            #expect(text.contains("<redacted>"))
        }
        #expect("\(token)".contains("2026-11-22T04:07:05.123Z"))
    }

    @Test func problemDocumentsBecomeTypedErrors() throws {
        let json = """
            {"type":"https://tokenvault.dev/problems/forbidden","title":"Forbidden","status":403,
             "detail":"uid 1002 (gid 1002) may not token:read in namespace payments","code":"forbidden",
             "permission":"token:read","instance":"urn:tokenvault:request:01J"}
            """
        let problem = try JSONDecoder().decode(Problem.self, from: Data(json.utf8))
        let error = TokenVaultClientError.problem(problem)
        #expect(error.code == "forbidden")
        #expect(error.status == 403)
        #expect(problem.permission == "token:read")
        #expect(error.description.contains("needs token:read"))
        #expect(error.description.contains("may not token:read"))
        #expect(TokenVaultClientError.timeout.code == nil)
        #expect(TokenVaultClientError.unexpectedResponse(status: 502, detail: "x").status == 502)
    }

    @Test func segmentsAndQueryValuesArePercentEncoded() throws {
        #expect(TokenVaultClient.percentEncoded("payments") == "payments")
        #expect(TokenVaultClient.percentEncoded("a-b.c_d~e") == "a-b.c_d~e")
        #expect(TokenVaultClient.percentEncoded("a/b c&d=e+f%") == "a%2Fb%20c%26d%3De%2Bf%25")
        #expect(TokenVaultClient.percentEncoded("й") == "%D0%B9")
        #expect(
            try TokenVaultClient.credentialPath("payments/alice", "/token") == "/v1/credentials/payments/alice/token")
        #expect(try TokenVaultClient.credentialPath("pay ments/a?b") == "/v1/credentials/pay%20ments/a%3Fb")
    }

    @Test func tokenShapeCheck() {
        #expect(TokenVaultClient.isJSONObject(Data(" {\"a\":1}\n".utf8)))
        #expect(!TokenVaultClient.isJSONObject(Data("[]".utf8)))
        #expect(!TokenVaultClient.isJSONObject(Data()))
    }
}
