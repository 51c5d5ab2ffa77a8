import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

/// The bad-input matrix: for every route, requests an attacker or a broken client would send
/// (malformed JSON, wrong types, bytes that are not UTF-8, numbers no type holds, oversize
/// fields, control characters in ids and labels, bodies of the wrong type or size). Each must
/// get its 4xx, a status the document lists for the operation, as a problem document; nothing
/// may be written; and the server must still answer afterwards.
extension OpenAPIContractTests {
    struct BadInput: Sendable, CustomStringConvertible {
        let route: String
        let what: String
        let request: [UInt8]
        let status: Int

        var description: String { "\(route): \(what)" }

        /// A request with `target` (sent as is: it may hold escapes the client would not write)
        /// and `body` bytes, declared JSON unless `contentType` says otherwise.
        init(
            _ route: String, _ what: String, _ method: String, _ target: String, body: [UInt8]? = nil,
            contentType: String? = "application/json", status: Int
        ) {
            self.route = route
            self.what = what
            self.status = status
            var head = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            if let body {
                if let contentType { head += "Content-Type: \(contentType)\r\n" }
                head += "Content-Length: \(body.count)\r\n"
            }
            request = Array((head + "\r\n").utf8) + (body ?? [])
        }

        init(_ route: String, _ what: String, _ method: String, _ target: String, json: String, status: Int) {
            self.init(route, what, method, target, body: Array(json.utf8), status: status)
        }
    }

    static let credential = "/v1/credentials/contract/alice"

    /// Each path with a credential id, with an id no credential may have.
    static var badIDs: [BadInput] {
        let routes: [(String, String, String)] = [
            ("GET", "", "GET /v1/credentials/{namespace}/{name}"),
            ("PUT", "", "PUT /v1/credentials/{namespace}/{name}"),
            ("DELETE", "", "DELETE /v1/credentials/{namespace}/{name}"),
            ("GET", "/token", "GET /v1/credentials/{namespace}/{name}/token"),
            ("POST", "/refresh", "POST /v1/credentials/{namespace}/{name}/refresh"),
            ("POST", "/exchange", "POST /v1/credentials/{namespace}/{name}/exchange"),
            ("GET", "/watch", "GET /v1/credentials/{namespace}/{name}/watch"),
        ]
        let ids: [(String, String)] = [
            ("an escape character in the name", "contract/a%1Bb"),
            ("a NUL in the namespace", "con%00tract/alice"),
            ("bytes that are not UTF-8", "contract/%FF%FE"),
            ("a name of 200 characters", "contract/" + String(repeating: "a", count: 200)),
            ("a name starting with a dot", "contract/.hidden"),
            ("a line break in the name", "contract/a%0D%0Ab"),
        ]
        let put = #"{"provider": "tinkoff-id", "token": {"access_token": "a"}}"#
        return routes.flatMap { method, suffix, route in
            ids.map { what, id in
                BadInput(
                    route, what, method, "/v1/credentials/\(id)\(suffix)",
                    body: method == "PUT" ? Array(put.utf8) : nil, status: 400)
            }
        }
    }

    static var badQueries: [BadInput] {
        let list = "GET /v1/credentials"
        let token = "GET /v1/credentials/{namespace}/{name}/token"
        let audit = "GET /v1/admin/audit"
        let delete = "DELETE /v1/credentials/{namespace}/{name}"
        return [
            .init(list, "limit not a number", "GET", "/v1/credentials?limit=abc", status: 400),
            .init(list, "limit 1e300", "GET", "/v1/credentials?limit=1e300", status: 400),
            .init(list, "limit beyond Int64", "GET", "/v1/credentials?limit=99999999999999999999999", status: 400),
            .init(list, "negative limit", "GET", "/v1/credentials?limit=-5", status: 400),
            .init(list, "a cursor with control characters", "GET", "/v1/credentials?cursor=a%01/b", status: 400),
            .init(
                list, "a cursor of 600 characters", "GET",
                "/v1/credentials?cursor=" + String(repeating: "c", count: 600), status: 400),
            .init(list, "a namespace that is not UTF-8", "GET", "/v1/credentials?namespace=%FF", status: 400),
            .init(list, "an unknown status", "GET", "/v1/credentials?status=bogus", status: 400),
            .init(token, "min_ttl 1e300", "GET", credential + "/token?min_ttl=1e300", status: 400),
            .init(token, "min_ttl NaN", "GET", credential + "/token?min_ttl=NaN", status: 400),
            .init(token, "min_ttl beyond a day", "GET", credential + "/token?min_ttl=86401", status: 400),
            .init(
                token, "min_ttl of 40 digits", "GET",
                credential + "/token?min_ttl=" + String(repeating: "9", count: 40),
                status: 400),
            .init(token, "min_ttl not UTF-8", "GET", credential + "/token?min_ttl=%FF", status: 400),
            .init(audit, "a negative cursor", "GET", "/v1/admin/audit?cursor=-1", status: 400),
            .init(audit, "a cursor beyond Int64", "GET", "/v1/admin/audit?cursor=99999999999999999999", status: 400),
            .init(audit, "a cursor that is not a number", "GET", "/v1/admin/audit?cursor=abc", status: 400),
            .init(audit, "limit 0", "GET", "/v1/admin/audit?limit=0", status: 400),
            .init(audit, "an order that is neither newest nor oldest", "GET", "/v1/admin/audit?order=asc", status: 400),
            .init(audit, "a credential filter with an escape", "GET", "/v1/admin/audit?credential=a/%1B", status: 400),
            .init(delete, "force neither true nor false", "DELETE", credential + "?force=maybe", status: 400),
        ]
    }

    static var badPuts: [BadInput] {
        let put = "PUT /v1/credentials/{namespace}/{name}"
        func body(_ token: String, labels: String = "{}", provider: String = #""tinkoff-id""#) -> String {
            #"{"provider": \#(provider), "labels": \#(labels), "token": \#(token)}"#
        }
        let valid = #"{"access_token": "a", "refresh_token": "r", "expires_in": 3600}"#
        var cases: [BadInput] = [
            .init(put, "malformed JSON", "PUT", credential, json: #"{"provider": "#, status: 400),
            .init(put, "an empty body", "PUT", credential, body: [], status: 400),
            .init(put, "a JSON array", "PUT", credential, json: "[1, 2]", status: 400),
            .init(put, "provider a number", "PUT", credential, json: body(valid, provider: "1"), status: 400),
            .init(put, "token a string", "PUT", credential, json: body(#""a""#), status: 400),
            .init(put, "access_token a number", "PUT", credential, json: body(#"{"access_token": 1}"#), status: 400),
            .init(put, "no access_token", "PUT", credential, json: body(#"{"refresh_token": "r"}"#), status: 400),
            .init(put, "labels an array", "PUT", credential, json: body(valid, labels: "[1]"), status: 400),
            .init(
                put, "a label value a number", "PUT", credential, json: body(valid, labels: #"{"a": 1}"#), status: 400),
            .init(
                put, "an unknown top-level member", "PUT", credential,
                json: #"{"provider": "tinkoff-id", "token": \#(valid), "extra": 1}"#, status: 400),
            .init(
                put, "expires_in 1e300", "PUT", credential,
                json: body(#"{"access_token": "a", "expires_in": 1e300}"#), status: 400),
            .init(
                put, "expires_in beyond Int64", "PUT", credential,
                json: body(#"{"access_token": "a", "expires_in": 99999999999999999999999}"#), status: 400),
            .init(
                put, "expires_in -1e308", "PUT", credential,
                json: body(#"{"access_token": "a", "expires_in": -1e308}"#), status: 400),
            .init(
                put, "expirationTimeout as a huge string", "PUT", credential,
                json: body(#"{"accessToken": "a", "expirationTimeout": "1e300"}"#), status: 400),
            .init(
                put, "an access token of 20,000 bytes", "PUT", credential,
                json: body(#"{"access_token": "\#(String(repeating: "a", count: 20_000))"}"#), status: 400),
            .init(
                put, "a refresh token of 9,000 bytes", "PUT", credential,
                json: body(#"{"access_token": "a", "refresh_token": "\#(String(repeating: "r", count: 9_000))"}"#),
                status: 400),
            .init(
                put, "a label value of 300 bytes", "PUT", credential,
                json: body(valid, labels: #"{"a": "\#(String(repeating: "v", count: 300))"}"#), status: 400),
            .init(
                put, "33 labels", "PUT", credential,
                json: body(valid, labels: "{" + (0..<33).map { #""k\#($0)": "v""# }.joined(separator: ",") + "}"),
                status: 400),
            .init(
                put, "an escape in a label value", "PUT", credential,
                json: body(valid, labels: #"{"a": "\u001b]0;pwned\u0007"}"#), status: 400),
            .init(
                put, "a line break in a label key", "PUT", credential,
                json: body(valid, labels: #"{"a\nb": "v"}"#), status: 400),
            .init(
                put, "a C1 control in a label value", "PUT", credential,
                json: body(valid, labels: #"{"a": "x\u009by"}"#), status: 400),
            .init(
                put, "JSON nested 100,000 deep", "PUT", credential,
                json: String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000), status: 413),
            .init(
                put, "JSON nested 10,000 deep", "PUT", credential,
                json: #"{"provider": "tinkoff-id", "token": {"x": "# + String(repeating: "[", count: 10_000)
                    + String(repeating: "]", count: 10_000) + "}}", status: 400),
            .init(
                put, "a body over the size limit", "PUT", credential,
                json: body(#"{"access_token": "\#(String(repeating: "a", count: 70_000))"}"#), status: 413),
            .init(
                put, "no Content-Type and not JSON", "PUT", credential, body: Array("provider=x".utf8),
                contentType: nil, status: 400),
            .init(
                put, "Content-Type text/plain", "PUT", credential, body: Array(body(valid).utf8),
                contentType: "text/plain", status: 415),
        ]
        // Bytes that are not UTF-8 inside a string and outside one.
        let prefix = Array(#"{"provider": "tinkoff-id", "token": {"access_token": ""#.utf8)
        let suffix = Array(#""}}"#.utf8)
        cases.append(
            .init(
                put, "a token that is not UTF-8", "PUT", credential, body: prefix + [0xFF, 0xFE] + suffix, status: 400))
        cases.append(
            .init(
                put, "a lone surrogate escape", "PUT", credential, json: body(#"{"access_token": "\ud800"}"#),
                status: 400))
        cases.append(
            .init(
                put, "a NUL byte outside strings", "PUT", credential,
                body: Array(#"{"provider":"#.utf8) + [0] + Array(#""x"}"#.utf8), status: 400))
        return cases
    }

    static var badExchanges: [BadInput] {
        let exchange = "POST /v1/credentials/{namespace}/{name}/exchange"
        let target = credential.replacingOccurrences(of: "alice", with: "dora") + "/exchange"
        let verifier = String(repeating: "v", count: 43)
        func body(_ members: String) -> String {
            #"{"provider": "oauth2", "redirect_uri": "https://app.example/cb", \#(members)}"#
        }
        return [
            .init(exchange, "malformed JSON", "POST", target, json: "{", status: 400),
            .init(exchange, "no code", "POST", target, json: body(#""code_verifier": "\#(verifier)""#), status: 400),
            .init(
                exchange, "code a number", "POST", target, json: body(#""code": 1, "code_verifier": "\#(verifier)""#),
                status: 400),
            .init(
                exchange, "a verifier too short", "POST", target, json: body(#""code": "c", "code_verifier": "short""#),
                status: 400),
            .init(
                exchange, "a code of 5,000 bytes", "POST", target,
                json: body(#""code": "\#(String(repeating: "c", count: 5_000))", "code_verifier": "\#(verifier)""#),
                status: 400),
            .init(
                exchange, "an escape in a label", "POST", target,
                json: body(#""code": "c", "code_verifier": "\#(verifier)", "labels": {"a": "\u001b[2J"}"#),
                status: 400),
            .init(
                exchange, "an unknown member", "POST", target,
                json: body(#""code": "c", "code_verifier": "\#(verifier)", "extra": true"#), status: 400),
        ]
    }

    static var badInputs: [BadInput] { badIDs + badQueries + badPuts + badExchanges }

    @Test func badInputGetsADocumentedClientErrorAndWritesNothing() async throws {
        let document = try OpenAPIDocument()
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            for name in ["alice", "bob"] {
                let seeded = try await server.request(
                    "PUT", "/v1/credentials/contract/\(name)",
                    body: server.putBody(token: SamplePayloads.tinkoff().json))
                try #require(seeded.status == 201, "seeding contract/\(name): \(seeded.text)")
            }
            let before = try await Self.state(server)

            #expect(Self.badInputs.count > 80)
            for bad in Self.badInputs {
                let operation = try #require(document.operations.first { $0.route == bad.route }, "\(bad.route)")
                let response = try await server.raw(bad.request)
                #expect(response.status == bad.status, "\(bad) answered \(response.status): \(response.text)")
                guard (400..<500).contains(response.status) else { continue }
                check(response, answering: operation, in: document)
                let code = response.json()["code"] as? String ?? "none"
                checkProblem(response, code: code, label: "\(bad)", in: document)
            }

            await #expect(try Self.state(server) == before, "a refused request changed a credential")
            await #expect(try Self.state(server).count == 2)
            let health = try await server.request("GET", "/v1/health")
            #expect(health.status == 200, "the server still answers")
        }
    }

    /// Every credential row as it is: id, generation, update time.
    static func state(_ server: TestServer) async throws -> [String] {
        try await server.fixture.vault.list(CredentialQuery(limit: 1000)).map {
            "\($0.id) \($0.generation) \($0.updatedAt)"
        }
    }
}
