import Foundation
import Hummingbird
import Logging
import Testing
import TokenVaultCore
import TokenVaultServer
import TokenVaultTesting
import Yams

/// The contract between docs/openapi.yaml and the daemon: the document lists exactly the
/// routes the server registers, every documented operation answers with a documented status,
/// media type and required members, and errors are the documented problem documents.
///
/// Clients are written against the document, so a route, status, member or permission that
/// changes on one side only must fail here rather than in a client.
@Suite struct OpenAPIContractTests {
    /// Sample values for path parameters; every `{parameter}` in the document needs one.
    static let pathValues = ["namespace": "contract", "name": "alice", "provider": "tinkoff-id"]

    // MARK: - Routes

    /// Every (method, path template) the router knows is documented, and every documented one
    /// is registered. The router is built exactly as `VaultServer.application` builds it.
    @Test func documentedRoutesEqualRegisteredRoutes() throws {
        let document = try OpenAPIDocument()
        let documented = Set(document.operations.map(\.route))
        let registered = Set(try Self.registeredRoutes())

        let undocumented = registered.subtracting(documented).sorted()
        let unregistered = documented.subtracting(registered).sorted()
        #expect(undocumented.isEmpty, "registered but not in docs/openapi.yaml: \(undocumented)")
        #expect(unregistered.isEmpty, "in docs/openapi.yaml but not registered: \(unregistered)")
        #expect(!documented.isEmpty && !registered.isEmpty, "nothing compared: the document or router is empty")
    }

    /// Every operation an audit row can name is documented where the audit row's `operation` is.
    @Test func everyAuditOperationIsDocumented() throws {
        let text = try String(contentsOfFile: OpenAPIDocument.defaultPath, encoding: .utf8)
        let description = try #require(
            text.range(of: "        operation:\n").map { String(text[$0.upperBound...].prefix(800)) })
        for operation in AuditOperation.all {
            #expect(description.contains("`\(operation.name)`"), "\(operation.name) is not in docs/openapi.yaml")
        }
    }

    /// The proxy's description names every request header it forwards, and no other.
    @Test func theProxysForwardedHeadersAreDocumented() throws {
        let text = try String(contentsOfFile: OpenAPIDocument.defaultPath, encoding: .utf8)
        let start = try #require(text.range(of: "Request headers follow an allowlist: "))
        let end = try #require(text.range(of: "and the\n", range: start.upperBound..<text.endIndex))
        let listed = Set(
            text[start.upperBound..<end.lowerBound].split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }
                .map { $0.element.lowercased() })
        #expect(listed == ForwardedHeaders.standard, "\(listed.symmetricDifference(ForwardedHeaders.standard))")
    }

    /// Every error code is in the `Problem` schema's table, at the status `VaultError.Code`
    /// answers it with (one exhaustive switch), and the table names no code that does not exist.
    @Test func everyErrorCodeHasItsDocumentedStatus() throws {
        let documented = try OpenAPIDocument().documentedProblemCodes()
        for code in VaultError.Code.allCases {
            #expect(
                documented[code.rawValue] == code.httpStatus,
                "\(code): documented \(documented[code.rawValue].map(String.init) ?? "nowhere"), answered \(code.httpStatus)"
            )
        }
        let unknown = documented.keys.filter { VaultError.Code(rawValue: $0) == nil }.sorted()
        #expect(unknown.isEmpty, "documented codes that do not exist: \(unknown)")
        #expect(documented.count == VaultError.Code.allCases.count)
    }

    /// Every problem the document shows as an example has its code's title, as the server sends it.
    @Test func documentedProblemExamplesHaveTheirCodesTitles() throws {
        let text = try String(contentsOfFile: OpenAPIDocument.defaultPath, encoding: .utf8)
        // Each example's `title: <title>`, then its `code: <code>` a few lines further down.
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        var checked = 0
        for (index, line) in lines.enumerated() where line.hasPrefix("title: ") && index > 0 {
            let near = lines[(index + 1)...min(lines.count - 1, index + 5)]
            guard let codeLine = near.first(where: { $0.hasPrefix("code: ") }),
                let code = VaultError.Code(rawValue: String(codeLine.dropFirst(6)))
            else { continue }
            #expect(String(line.dropFirst(7)) == code.title, "example for \(code): \(line)")
            checked += 1
        }
        #expect(checked >= 10, "only \(checked) problem examples found")
        for code in VaultError.Code.allCases { #expect(!code.title.isEmpty, "\(code) has no title") }
    }

    /// A dangling `$ref` would make `resolve` return an empty node and silently weaken every
    /// other check, so each one must point at something.
    @Test func everyReferenceResolves() throws {
        let document = try OpenAPIDocument()
        let dangling = document.references.filter { document.lookup($0) == nil }
        #expect(dangling.isEmpty, "unresolvable $ref: \(dangling.sorted())")
    }

    // MARK: - Operations

    /// Each documented operation, called once against a real server with sample parameters and
    /// the documented request example, answers with a documented status and media type, the
    /// documented headers, and a body holding the schema's required members. `DELETE` runs last
    /// and on a credential of its own so it does not disturb the others.
    @Test func everyDocumentedOperationAnswersAsDocumented() async throws {
        let document = try OpenAPIDocument()
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let operations = document.operations
            // The seeding PUTs are checked too: they are the only requests that create (201).
            let put = try #require(operations.first { $0.route == "PUT /v1/credentials/{namespace}/{name}" })
            for name in ["alice", "bob"] {
                let seeded = try await server.request(
                    "PUT", "/v1/credentials/contract/\(name)",
                    body: server.putBody(token: SamplePayloads.tinkoff().json))
                try #require(seeded.status == 201, "seeding contract/\(name): \(seeded.text)")
                check(seeded, answering: put, in: document)
            }

            #expect(operations.count >= 10, "suspiciously few operations: \(operations.map(\.route))")
            let ordered = operations.filter { $0.method != "DELETE" } + operations.filter { $0.method == "DELETE" }
            for operation in ordered {
                var values = Self.pathValues
                if operation.method == "DELETE" { values["name"] = "bob" }
                let target = try fill(operation.path, with: values)
                // PUT's examples name providers this test server may not have; send a valid body.
                let body =
                    try operation.method == "PUT"
                    ? server.putBody(token: SamplePayloads.tinkoff().json) : operation.requestExample()
                let response: RawHTTPResponse
                if document.isStream(operation) {
                    // Streams never end by themselves: read the head and the first line. The event
                    // stream has no line of its own, so a store causes one.
                    response = try await server.firstLine(operation.method, target) {
                        _ = try await server.request(
                            "PUT", "/v1/credentials/contract/carol",
                            body: server.putBody(token: SamplePayloads.tinkoff().json))
                    }
                    let line = try? JSONSerialization.jsonObject(with: Data(response.body))
                    #expect(line != nil, "\(operation.route): the first line is not JSON: \(response.text)")
                } else {
                    response = try await server.request(operation.method, target, body: body)
                }
                check(response, answering: operation, in: document)
            }
        }
    }

    // MARK: - Permissions

    /// Each operation's `x-tokenvault-permission` is the one it needs: a peer granted only that
    /// permission on namespace `contract` (on every namespace for `admin`) is not refused, and a
    /// peer granted something else is refused with `403` naming exactly that permission. `none`
    /// operations are never refused. The daemon's uid is set to someone else and root is no
    /// admin, so the rules alone decide for this process (tests may run as root).
    @Test(arguments: Permission.allCases)
    func documentedPermissionsAreEnforced(granted: Permission) async throws {
        let document = try OpenAPIDocument()
        let me = getuid()
        let namespaces: Set<String> = granted == .admin ? ["*"] : [Self.pathValues["namespace"]!]
        let server = try await TestServer(
            policy: AccessPolicy(
                rules: [.init(subject: .user(me), namespaces: namespaces, permissions: [granted])],
                daemonUID: me &+ 12345, rootIsAdmin: false))
        try await withStopping(server, stop: { await $0.stop() }) { server in

            for operation in document.operations {
                let needed = try #require(
                    operation.definition["x-tokenvault-permission"] as? String,
                    "\(operation.route) has no x-tokenvault-permission")
                let body =
                    try operation.method == "PUT"
                    ? server.putBody(token: SamplePayloads.tinkoff().json) : operation.requestExample()
                let target = try fill(operation.path, with: Self.pathValues)
                let response =
                    document.isStream(operation)
                    ? try await server.firstLine(operation.method, target) {
                        // Stored directly: this peer may lack credential:write.
                        try await server.fixture.vault.put(
                            try CredentialID("contract/carol"),
                            payload: SamplePayloads.decode(SamplePayloads.tinkoff().json),
                            provider: "tinkoff-id")
                    }
                    : try await server.request(operation.method, target, body: body)
                let label = "\(operation.route) (needs \(needed)) with only \(granted.rawValue)"
                // `admin` implies every permission, `token:read` implies `credential:use`; `none`
                // needs nothing.
                if needed == "none" || Permission(rawValue: needed)?.isGranted(by: [granted]) == true {
                    #expect(response.status != 403, "\(label) was refused: \(response.text)")
                } else {
                    #expect(response.status == 403, "\(label) answered \(response.status): \(response.text)")
                    #expect(response.json()["permission"] as? String == needed, "\(label): \(response.text)")
                    #expect(document.responses(of: operation)["403"] != nil, "\(operation.route) does not document 403")
                }
            }
        }
    }

    // MARK: - Errors

    /// A request the document says fails, the status it must fail with, and its problem `code`.
    struct ErrorProbe: Sendable, CustomStringConvertible {
        let method: String
        let target: String
        var body: String? = nil
        /// The documented operation, `METHOD /template`; nil for a request that matches none.
        let operation: String?
        let status: Int
        let code: String
        var description: String { "\(method) \(target)" }
    }

    static let errorProbes: [ErrorProbe] = [
        .init(method: "GET", target: "/v2/nothing", operation: nil, status: 404, code: "not_found"),
        .init(
            method: "GET", target: "/v1/credentials/contract/.bad", operation: "GET /v1/credentials/{namespace}/{name}",
            status: 400, code: "invalid_credential_id"),
        .init(
            method: "GET", target: "/v1/credentials/contract/nobody",
            operation: "GET /v1/credentials/{namespace}/{name}", status: 404, code: "credential_not_found"),
        .init(
            method: "GET", target: "/v1/credentials/contract/nobody/token",
            operation: "GET /v1/credentials/{namespace}/{name}/token", status: 404, code: "credential_not_found"),
        .init(
            method: "PUT", target: "/v1/credentials/contract/carol", body: #"{"provider": "tinkoff-id", "token": "#,
            operation: "PUT /v1/credentials/{namespace}/{name}", status: 400, code: "invalid_payload"),
        .init(
            method: "PUT", target: "/v1/credentials/contract/carol",
            body: #"{"provider": "acme-id", "token": {"access_token": "a"}}"#,
            operation: "PUT /v1/credentials/{namespace}/{name}", status: 422, code: "unknown_provider"),
        .init(
            method: "GET", target: "/v1/credentials/contract/alice/token?min_ttl=3600",
            operation: "GET /v1/credentials/{namespace}/{name}/token", status: 409, code: "min_ttl_unreachable"),
        .init(
            method: "GET", target: "/v1/credentials?limit=0", operation: "GET /v1/credentials", status: 400,
            code: "invalid_field"),
    ]

    /// Each probe fails with its status, that status is documented for the operation (or for
    /// unmatched routes), and the body is a problem document: the `Problem` schema's required
    /// members, `status` equal to the HTTP status, a `type` naming the code, a code the
    /// `Problem` table lists for that status, and `instance` naming the `X-Request-Id`.
    @Test func documentedErrorsHaveProblemShape() async throws {
        let document = try OpenAPIDocument()
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let seeded = try await server.request(
                "PUT", "/v1/credentials/contract/alice", body: server.putBody(token: SamplePayloads.tinkoff().json))
            try #require(seeded.status == 201, "seeding contract/alice: \(seeded.text)")

            for probe in Self.errorProbes {
                let response = try await server.request(probe.method, probe.target, body: probe.body)
                #expect(response.status == probe.status, "\(probe): \(response.text)")
                let responses: [String: [String: Any]]
                if let route = probe.operation {
                    let operation = try #require(
                        document.operations.first { $0.route == route }, "\(route) not documented")
                    responses = document.responses(of: operation)
                } else {
                    responses = document.unmatchedRouteResponses
                }
                #expect(
                    responses[String(response.status)] != nil,
                    "\(probe): \(response.status) is not documented (documented: \(responses.keys.sorted()))")
                checkProblem(response, code: probe.code, label: "\(probe)", in: document)
            }
        }
    }

    // MARK: - Conventions

    /// Promises of the document's "Conventions" and "Errors" sections that no single operation
    /// states: `405` with an `Allow` header listing the path's documented methods, `415` for a
    /// body that is not JSON, and an `X-Request-Id` header on every response.
    @Test func describedConventionsHold() async throws {
        let document = try OpenAPIDocument()
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let seeded = try await server.request(
                "PUT", "/v1/credentials/contract/alice", body: server.putBody(token: SamplePayloads.tinkoff().json))
            try #require(seeded.status == 201, "seeding contract/alice: \(seeded.text)")

            let wrongMethod = try await server.request("POST", "/v1/credentials/contract/alice")
            #expect(wrongMethod.status == 405, "POST on a path without POST: \(wrongMethod.text)")
            #expect(document.unmatchedRouteResponses["405"] != nil)
            if wrongMethod.status == 405 {
                checkProblem(
                    wrongMethod, code: "method_not_allowed", label: "POST /v1/credentials/contract/alice", in: document)
                let allowed = Set(
                    (wrongMethod.headers["allow"] ?? "").split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespaces).uppercased()
                    })
                let documented = Set(
                    document.operations.filter { $0.path == "/v1/credentials/{namespace}/{name}" }.map(\.method))
                #expect(allowed == documented, "Allow lists \(allowed.sorted()); the path has \(documented.sorted())")
            }

            // A valid body, but declared as text: the media type alone must refuse it.
            let socketPath = server.socketPath
            let body = server.putBody(token: SamplePayloads.tinkoff().json)
            let notJSON = try await offThePool { () -> RawHTTPResponse in
                let connection = try UnixSocketConnection(path: socketPath)
                try connection.send(
                    "PUT /v1/credentials/contract/dave HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                        + "Content-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                guard let response = try connection.readResponse() else { throw SocketTestError("connection closed") }
                return response
            }
            #expect(notJSON.status == 415, "PUT with Content-Type text/plain: \(notJSON.status) \(notJSON.text)")
            if notJSON.status == 415 {
                checkProblem(notJSON, code: "unsupported_media_type", label: "PUT text/plain", in: document)
            }

            for target in ["/v1/health", "/v1/credentials/contract/alice", "/metrics"] {
                let response = try await server.request("GET", target)
                #expect(
                    response.headers["x-request-id"] != nil,
                    "GET \(target) answered \(response.status) without X-Request-Id")
            }
        }
    }

    // MARK: - Checks

    /// The response's status is documented for the operation (or `default` is), its media type
    /// is one documented for that status (problems are always `application/problem+json`), the
    /// documented headers are present, and a JSON body holds the schema's required members.
    func check(_ response: RawHTTPResponse, answering operation: OpenAPIOperation, in document: OpenAPIDocument) {
        let label = "\(operation.route) (\(operation.id)) answered \(response.status)"
        let responses = document.responses(of: operation)
        guard let documented = responses[String(response.status)] ?? responses["default"] else {
            Issue.record("\(label), documented: \(responses.keys.sorted()); body: \(response.text)")
            return
        }
        for header in (documented["headers"] as? [String: Any] ?? [:]).keys.sorted() {
            #expect(response.headers[header.lowercased()] != nil, "\(label) without the documented \(header) header")
        }
        let content = documented["content"] as? [String: Any] ?? [:]
        guard !content.isEmpty else {
            #expect(response.body.isEmpty, "\(label) with a body, documented without one: \(response.text)")
            return
        }
        let contentType = response.headers["content-type"].map(mediaType)
        let documentedTypes = Dictionary(content.map { (mediaType($0.key), $0.value) }) { first, _ in first }
        guard let contentType, let media = documentedTypes[contentType] as? [String: Any] else {
            Issue.record(
                "\(label) as \(contentType ?? "no Content-Type"), documented: \(documentedTypes.keys.sorted())")
            return
        }
        if response.status >= 400 {
            #expect(contentType == "application/problem+json", "\(label): errors are problem documents")
        }
        if contentType == "application/json" || contentType.hasSuffix("+json"), let schema = media["schema"] {
            guard let body = try? JSONSerialization.jsonObject(with: Data(response.body)) else {
                Issue.record("\(label) with a body that is not JSON: \(response.text)")
                return
            }
            let missing = document.missingMembers(in: body, of: schema, at: "body")
            #expect(missing.isEmpty, "\(label) without required members \(missing): \(response.text)")
        }
    }

    /// A problem document as the `Problem` schema and the "Errors" section describe it.
    func checkProblem(_ response: RawHTTPResponse, code: String, label: String, in document: OpenAPIDocument) {
        #expect(
            response.headers["content-type"].map(mediaType) == "application/problem+json",
            "\(label): Content-Type \(response.headers["content-type"] ?? "none")")
        let problem = response.json()
        let missing = document.missingMembers(in: problem, of: ["$ref": "#/components/schemas/Problem"], at: "problem")
        #expect(missing.isEmpty, "\(label): problem without \(missing): \(response.text)")
        #expect(problem["status"] as? Int == response.status, "\(label): problem status differs from HTTP status")
        #expect(problem["code"] as? String == code, "\(label): code \(problem["code"] ?? "none"), expected \(code)")
        #expect(problem["type"] as? String == "https://tokenvault.dev/problems/\(code)", "\(label): type")
        let title = VaultError.Code(rawValue: code)?.title
        #expect(
            title?.isEmpty == false && problem["title"] as? String == title,
            "\(label): title \(problem["title"] ?? "none")")
        #expect(
            document.problemCodes(for: response.status).contains(code),
            "\(label): code \(code) is not in the Problem table for \(response.status)")
        let requestID = response.headers["x-request-id"]
        #expect(requestID != nil, "\(label): no X-Request-Id")
        if let requestID {
            #expect(problem["instance"] as? String == "urn:tokenvault:request:\(requestID)", "\(label): instance")
        }
    }

    // MARK: - Helpers

    /// `METHOD /path/{parameter}` for every route a router built like the daemon's registers.
    private static func registeredRoutes() throws -> [String] {
        let fixture = try TestVault()
        let api = VaultAPI(
            vault: fixture.vault, admin: fixture.database, rotation: nil,
            policy: AccessPolicy(rules: [], daemonUID: getuid()),
            audit: AuditRecorder(vault: fixture.vault, logger: Logger(label: "openapi-contract")),
            options: .init(version: "test", backupDirectory: fixture.directory.file("backups")))
        let router = Router(context: VaultRequestContext.self)
        api.register(on: router)
        return router.routes.map { "\($0.method.rawValue) \(normalisedPath("\($0.path)"))" }
    }
}

/// Hummingbird spells a parameter `{name}` in a route description but `:name` when it is
/// registered; OpenAPI spells it `{name}`. Trailing slashes are not significant to either.
private func normalisedPath(_ path: String) -> String {
    let segments = path.split(separator: "/", omittingEmptySubsequences: true).map { segment in
        segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
    }
    return "/" + segments.joined(separator: "/")
}

/// `path` with every `{parameter}` replaced by its sample value.
func fill(_ path: String, with values: [String: String]) throws -> String {
    var filled = path
    for match in path.matches(of: /\{([^}]+)\}/) {
        let value = try #require(values[String(match.output.1)], "no sample value for {\(match.output.1)} in \(path)")
        filled = filled.replacingOccurrences(of: String(match.output.0), with: value)
    }
    return filled
}

/// The media type without parameters, lower-cased: `text/plain; version=0.0.4` is `text/plain`.
func mediaType(_ contentType: String) -> String {
    contentType.split(separator: ";", maxSplits: 1).first.map {
        $0.trimmingCharacters(in: .whitespaces).lowercased()
    } ?? ""
}

/// Yams gives `[AnyHashable: Any]` mappings; JSON-like `[String: Any]` all the way down is
/// easier to walk and can be handed to `JSONSerialization`.
private func plain(_ node: Any?) -> Any? {
    switch node {
    case let mapping as [AnyHashable: Any]:
        Dictionary(mapping.map { ("\($0.key.base)", plain($0.value) ?? NSNull()) }) { first, _ in first }
    case let sequence as [Any]: sequence.map { plain($0) ?? NSNull() }
    default: node
    }
}

/// One operation of the document: an HTTP method on a path template.
struct OpenAPIOperation {
    let method: String
    let path: String
    let definition: [String: Any]

    var id: String { definition["operationId"] as? String ?? "?" }
    var route: String { "\(method) \(path)" }

    /// The request body to send: the documented example (the first by name when there are
    /// several, so runs are repeatable) as JSON, or nil when the operation takes no body.
    func requestExample() throws -> String? {
        guard
            let body = definition["requestBody"] as? [String: Any],
            let json = (body["content"] as? [String: Any])?["application/json"] as? [String: Any]
        else { return nil }
        let examples = json["examples"] as? [String: Any] ?? [:]
        let firstExample = examples.keys.sorted().first.flatMap { (examples[$0] as? [String: Any])?["value"] }
        let value = try #require(
            json["example"] ?? firstExample, "\(route) documents a request body without an example")
        return String(
            decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys]), as: UTF8.self)
    }
}

/// docs/openapi.yaml, loaded once per test and walked with a few helpers.
struct OpenAPIDocument {
    static let methods = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]
    static let defaultPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/openapi.yaml").path

    let root: [String: Any]

    init(path: String = OpenAPIDocument.defaultPath) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        root = try #require(plain(try Yams.load(yaml: text)) as? [String: Any], "\(path) is not a YAML mapping")
        #expect((root["openapi"] as? String)?.hasPrefix("3.1") == true, "\(path) is not OpenAPI 3.1")
    }

    /// The node a local JSON pointer (`#/components/schemas/Problem`) names, or nil.
    func lookup(_ pointer: String) -> Any? {
        guard pointer.hasPrefix("#/") else { return nil }
        return pointer.dropFirst(2).split(separator: "/").reduce(root as Any?) { node, token in
            (node as? [String: Any])?[
                token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")]
        }
    }

    /// `node` with `$ref`s followed until it is not a reference (a bare string is taken as a
    /// pointer, as in `x-tokenvault-unmatched-route-responses`). Dangling references give an
    /// empty node; `everyReferenceResolves` makes sure there are none.
    func resolve(_ node: Any?) -> [String: Any] {
        var current = (node as? String).flatMap(lookup) ?? node
        var seen: Set<String> = []
        while let reference = (current as? [String: Any])?["$ref"] as? String, seen.insert(reference).inserted {
            current = lookup(reference)
        }
        return current as? [String: Any] ?? [:]
    }

    /// Every `$ref` anywhere in the document.
    var references: Set<String> {
        func collect(_ node: Any) -> [String] {
            switch node {
            case let mapping as [String: Any]:
                ((mapping["$ref"] as? String).map { [$0] } ?? []) + mapping.values.flatMap(collect)
            case let sequence as [Any]: sequence.flatMap(collect)
            default: []
            }
        }
        return Set(collect(root))
    }

    /// Every operation under `paths`, sorted by path then method.
    var operations: [OpenAPIOperation] {
        let paths = root["paths"] as? [String: Any] ?? [:]
        return paths.flatMap { path, item in
            let item = resolve(item)
            return Self.methods.compactMap { method in
                (item[method] as? [String: Any]).map {
                    OpenAPIOperation(method: method.uppercased(), path: path, definition: $0)
                }
            }
        }.sorted { ($0.path, $0.method) < ($1.path, $1.method) }
    }

    /// The operation's responses by status code (`"200"`, `"default"`), references resolved.
    func responses(of operation: OpenAPIOperation) -> [String: [String: Any]] {
        (operation.definition["responses"] as? [String: Any] ?? [:]).mapValues(resolve)
    }

    /// Whether the operation answers with an NDJSON stream.
    func isStream(_ operation: OpenAPIOperation) -> Bool {
        (responses(of: operation)["200"]?["content"] as? [String: Any])?["application/x-ndjson"] != nil
    }

    /// What a request matching no operation may receive, from the top-level extension.
    var unmatchedRouteResponses: [String: [String: Any]] {
        (root["x-tokenvault-unmatched-route-responses"] as? [String: Any] ?? [:])
            .filter { Int($0.key) != nil }.mapValues(resolve)
    }

    /// Every code in the `Problem` schema's tables (`| 404 | \`a\`, \`b\` |`), with its status.
    func documentedProblemCodes() throws -> [String: Int] {
        let description = resolve(["$ref": "#/components/schemas/Problem"])["description"] as? String ?? ""
        var codes: [String: Int] = [:]
        for row in description.split(separator: "\n") {
            guard let match = row.firstMatch(of: /^\| (\d{3}) \|/), let status = Int(match.output.1) else { continue }
            for code in row.matches(of: /`([a-z0-9_]+)`/).map({ String($0.output.1) }) {
                #expect(codes[code] == nil || codes[code] == status, "\(code) is in the table twice")
                codes[code] = status
            }
        }
        return codes
    }

    /// The codes the `Problem` schema's table lists for `status` (`| 404 | \`a\`, \`b\` |`).
    func problemCodes(for status: Int) -> [String] {
        let description = resolve(["$ref": "#/components/schemas/Problem"])["description"] as? String ?? ""
        guard let row = description.split(separator: "\n").first(where: { $0.hasPrefix("| \(status) |") }) else {
            return []
        }
        return row.matches(of: /`([a-z0-9_]+)`/).map { String($0.output.1) }
    }

    /// The members the schema requires that `value` lacks, by location (`body.items[0].id`),
    /// following `$ref`, object `properties` and array `items`. Members that are present are
    /// checked recursively; alternatives (`oneOf`, `anyOf`) are not.
    func missingMembers(in value: Any, of schemaNode: Any?, at location: String) -> [String] {
        let schema = resolve(schemaNode)
        if let object = value as? [String: Any] {
            let required = schema["required"] as? [String] ?? []
            let properties = schema["properties"] as? [String: Any] ?? [:]
            let missing = required.filter { object[$0] == nil }.map { "\(location).\($0)" }
            return missing
                + object.keys.sorted().flatMap { name in
                    properties[name].map { missingMembers(in: object[name]!, of: $0, at: "\(location).\(name)") } ?? []
                }
        }
        if let array = value as? [Any], let items = schema["items"] {
            return array.enumerated().flatMap { missingMembers(in: $1, of: items, at: "\(location)[\($0)]") }
        }
        if schema["required"] != nil {
            return ["\(location) (not an object)"]
        }
        return []
    }
}
