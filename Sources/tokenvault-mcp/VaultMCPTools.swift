import Foundation
import MCP
import NIOCore
import TokenVaultClient

/// The tools `tokenvault mcp` offers an AI agent: list the credentials it may use, make an HTTP
/// request through one of them (the daemon's proxy), and start a sign-in that gets a person to
/// grant one. Everything goes through the daemon's socket as the agent's own uid, so the daemon's
/// rules for that uid decide, and a sign-in the agent starts can be finished only by that uid (a
/// device grant the daemon ends itself); a token is never in a result or an error (the daemon
/// never sends one to a `credential:use` or `credential:authorize` caller).
struct VaultMCPTools: Sendable {
    let vault: TokenVaultClient
    /// The most of an answer's body a tool result carries (an agent's context is not a file).
    let maximumBodyBytes: Int
    /// Offers a person a page through the client (MCP URL-mode elicitation), when the client
    /// declared it can: the sign-in link reaches the person without passing through the model.
    /// Answers whether it was offered; the tool's result does not wait for the person.
    let showURL: @Sendable (_ message: String, _ url: String) -> Bool

    static let listName = "list_credentials"
    static let requestName = "http_request"
    static let signInName = "sign_in"

    var tools: [Tool] {
        [
            Tool(
                name: Self.listName,
                description: """
                    The credentials you may use to call APIs (you never see their tokens): id, provider, \
                    status, and the API base URLs each may be used against.
                    """,
                inputSchema: .object([
                    "type": "object",
                    "properties": .object([
                        "namespace": .object(["type": "string", "description": "Only credentials in this namespace."])
                    ]),
                ]),
                annotations: .init(readOnlyHint: true, openWorldHint: false)),
            Tool(
                name: Self.requestName,
                description: """
                    Make an HTTP request with a credential's access token attached by the vault. `url` is a URL \
                    inside one of the credential's API base URLs, or a path (with query) under the first of \
                    them. The answer's status, headers and body (text, cut at \(maximumBodyBytes) bytes) are \
                    returned; a copy of the token the API echoes, as sent or percent-encoded, comes back \
                    as * characters, and a header holding one is left out.
                    """,
                inputSchema: .object([
                    "type": "object",
                    "properties": .object([
                        "credential": .object(["type": "string", "description": "The credential id, namespace/name."]),
                        "method": .object(["type": "string", "enum": .array(Self.methods.map(Value.string))]),
                        "url": .object(["type": "string", "description": "A URL, or a path starting with /."]),
                        "headers": .object([
                            "type": "object", "additionalProperties": .object(["type": "string"]),
                            "description": "Request headers (Authorization is the vault's to set).",
                        ]),
                        "body": .object(["type": "string", "description": "The request body, as text."]),
                    ]),
                    "required": .array(["credential", "method", "url"]),
                ]),
                annotations: .init(destructiveHint: true, openWorldHint: true)),
            Tool(
                name: Self.signInName,
                description: """
                    Ask a person to grant a credential: for one that is missing or needs a new sign-in \
                    (needs_reauth). With mode device (the default) the answer is a page and a code the person \
                    enters there; the vault waits for their decision and stores the credential itself. With mode \
                    url it is a link to the sign-in page, whose redirect (redirect_uri, one the provider allows) \
                    must be finished by your own user. Show the person the link; you never see a token.
                    """,
                inputSchema: .object([
                    "type": "object",
                    "properties": .object([
                        "credential": .object(["type": "string", "description": "The credential id, namespace/name."]),
                        "provider": .object([
                            "type": "string",
                            "description": "The provider instance; by default the credential's own, if you may use it.",
                        ]),
                        "scopes": .object(["type": "array", "items": .object(["type": "string"])]),
                        "mode": .object(["type": "string", "enum": .array(["device", "url"]), "default": "device"]),
                        "redirect_uri": .object([
                            "type": "string", "description": "Mode url: where the person returns.",
                        ]),
                    ]),
                    "required": .array(["credential"]),
                ]),
                annotations: .init(destructiveHint: false, idempotentHint: false, openWorldHint: true)),
        ]
    }

    /// The methods `http_request` offers (its schema's list) and takes: no other reaches the daemon.
    static let methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]

    func call(_ name: String, _ arguments: [String: Value]) async -> CallTool.Result {
        do {
            switch name {
            case Self.listName: return try await list(namespace: arguments["namespace"]?.stringValue)
            case Self.requestName: return try await request(arguments)
            case Self.signInName: return try await signIn(arguments)
            default: return Self.failure("unknown tool '\(name.prefix(100))'")
            }
        } catch let error as TokenVaultClientError where Self.needsSignIn.contains(error.code ?? "") {
            // The call cannot be made until a person grants the credential: say how.
            let credential = arguments["credential"]?.stringValue ?? ""
            return .init(
                content: [
                    .text(
                        text: """
                            \(error.description)
                            A person must sign in to grant \(credential): call \(Self.signInName) with \
                            {"credential": "\(credential)"} (and "provider" if the credential does not exist yet), \
                            show them the link it answers, then try again.
                            """, annotations: nil, _meta: nil)
                ],
                structuredContent: .object([
                    "code": .string(error.code ?? ""),
                    "sign_in": .object(["tool": .string(Self.signInName), "credential": .string(credential)]),
                ]), isError: true)
        } catch let error as TokenVaultClientError {
            // The daemon's refusal (its code and detail), or why it could not be reached: never a token.
            return Self.failure(error.description)
        } catch {
            return Self.failure("\(type(of: error))")
        }
    }

    private func list(namespace: String?) async throws -> CallTool.Result {
        let credentials = try await vault.usableCredentials(namespace: namespace)
        let items: [Value] = credentials.map { credential in
            .object([
                "id": .string(credential.id), "provider": .string(credential.provider),
                "status": .string(credential.status), "api_base_urls": .array(credential.apiBaseURLs.map(Value.string)),
            ])
        }
        let text =
            credentials.isEmpty
            ? "No credential may be used."
            : credentials.map { "\($0.id) (\($0.provider), \($0.status)): \($0.apiBaseURLs.joined(separator: ", "))" }
                .joined(separator: "\n")
        return .init(
            content: [.text(text: text, annotations: nil, _meta: nil)],
            structuredContent: .object(["credentials": .array(items)]), isError: false)
    }

    private func request(_ arguments: [String: Value]) async throws -> CallTool.Result {
        guard let credential = arguments["credential"]?.stringValue, let method = arguments["method"]?.stringValue,
            let url = arguments["url"]?.stringValue
        else { return Self.failure("credential, method and url are required strings") }
        guard Self.methods.contains(method) else {
            return Self.failure("method must be one of \(Self.methods.joined(separator: ", "))")
        }
        var headers: [TokenVaultClient.UpstreamHeader] = []
        for (name, value) in arguments["headers"]?.objectValue ?? [:] {
            guard let text = value.stringValue else {
                return Self.failure("header \(name.prefix(100)) is not a string")
            }
            headers.append(.init(name: name, value: text))
        }
        let body = arguments["body"]?.stringValue.map { TokenVaultClient.CallBody.bytes(ByteBuffer(string: $0)) }
        let answer = try await vault.call(credential, method: method, url, headers: headers, body: body)
        var received = ByteBuffer()
        var truncated = false
        for try await var chunk in answer.body {
            let room = maximumBodyBytes - received.readableBytes
            if chunk.readableBytes > room {
                truncated = true
                if room > 0, let slice = chunk.readSlice(length: room) { received.writeImmutableBuffer(slice) }
                break
            }
            received.writeBuffer(&chunk)
        }
        let text = String(decoding: received.readableBytesView, as: UTF8.self)
        let headerLines = answer.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
        return .init(
            content: [
                .text(
                    text: "HTTP \(answer.status)\n\(headerLines)\n\n\(text)\(truncated ? "\n[body cut]" : "")",
                    annotations: nil, _meta: nil)
            ],
            structuredContent: .object([
                "status": .int(answer.status),
                "headers": .object(
                    Dictionary(answer.headers.map { ($0.name.lowercased(), $0.value) }) { $0 + ", " + $1 }
                        .mapValues(Value.string)),
                "body": .string(text), "truncated": .bool(truncated), "refreshed": .bool(answer.refreshed),
            ]), isError: answer.status >= 400)
    }

    /// The refusals a sign-in mends: no credential yet, or one whose grant the provider refused.
    static let needsSignIn: Set<String> = ["credential_not_found", "needs_reauth"]

    private func signIn(_ arguments: [String: Value]) async throws -> CallTool.Result {
        guard let credential = arguments["credential"]?.stringValue else {
            return Self.failure("credential is a required string")
        }
        var provider = arguments["provider"]?.stringValue
        if provider == nil {
            let namespace = credential.split(separator: "/").first.map(String.init)
            provider = try await vault.usableCredentials(namespace: namespace).first { $0.id == credential }?.provider
        }
        guard let provider else {
            return Self.failure("give provider: \(credential.prefix(100)) is not one of the credentials you may use")
        }
        var scopes: [String] = []
        if let given = arguments["scopes"] {
            guard let list = given.arrayValue, list.allSatisfy({ $0.stringValue != nil }) else {
                return Self.failure("scopes must be an array of strings")
            }
            scopes = list.compactMap(\.stringValue)
        }
        let mode = arguments["mode"].map { $0.stringValue ?? "" } ?? "device"
        guard mode == "device" || mode == "url" else { return Self.failure("mode must be device or url") }
        let device = mode == "device"
        let redirectURI = arguments["redirect_uri"]?.stringValue
        if !device, redirectURI == nil { return Self.failure("mode url needs redirect_uri") }
        if device, redirectURI != nil { return Self.failure("mode device has no redirect_uri") }
        let started = try await vault.startSignIn(
            credential, provider: provider, redirectURI: device ? nil : redirectURI, scopes: scopes,
            mode: device ? .device : .url)
        var structured: [String: Value] = ["expires_at": .string(started.expiresAt)]
        let instructions: String
        if device, let code = started.userCode, let page = started.verificationURI {
            // The page and the code are what the person needs, and grant nothing by themselves.
            let offered = showURL(
                "Sign in to grant \(credential) (\(provider)): open the page and enter the code \(code)",
                started.verificationURIComplete ?? page)
            instructions =
                "Ask the person to open \(page) and enter the code \(code) before \(started.expiresAt). The vault "
                + "stores \(credential) once they approve; then try again."
                + (offered ? " The page was also offered to them through your client." : "")
            structured["user_code"] = .string(code)
            structured["verification_uri"] = .string(page)
            if let complete = started.verificationURIComplete {
                structured["verification_uri_complete"] = .string(complete)
            }
            structured["offered_to_user"] = .bool(offered)
        } else if let url = started.authorizationURL {
            // The link carries the sign-in's state (unless it was pushed): when the client can show
            // it to the person, it is not put in the model's context at all.
            let offered = showURL("Sign in to grant \(credential) (\(provider))", url)
            let finish = "Once the redirect to \(redirectURI ?? "") is finished (by your user, the only one who may), "
            if offered {
                instructions =
                    "The sign-in page was offered to the person through your client; it is valid until "
                    + "\(started.expiresAt). " + finish + "\(credential) is stored."
            } else {
                instructions =
                    "Send the person to \(url) before \(started.expiresAt). " + finish + "\(credential) is stored."
                structured["authorization_url"] = .string(url)
            }
            structured["offered_to_user"] = .bool(offered)
        } else {
            return Self.failure("the daemon answered no link")
        }
        return .init(
            content: [.text(text: instructions, annotations: nil, _meta: nil)],
            structuredContent: .object(structured), isError: false)
    }

    private static func failure(_ text: String) -> CallTool.Result {
        .init(content: [.text(text: text, annotations: nil, _meta: nil)], isError: true)
    }
}
