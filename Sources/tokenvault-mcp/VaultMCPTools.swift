import Foundation
import MCP
import NIOCore
import TokenVaultClient

/// The tools `tokenvault mcp` offers an AI agent: list the credentials it may use, and make an
/// HTTP request through one of them (the daemon's proxy). Everything goes through the daemon's
/// socket as the agent's own uid, so the daemon's rules for that uid decide; a token is never in
/// a result or an error (the daemon never sends one to a `credential:use` caller).
struct VaultMCPTools: Sendable {
    let vault: TokenVaultClient
    /// The most of an answer's body a tool result carries (an agent's context is not a file).
    let maximumBodyBytes: Int

    static let listName = "list_credentials"
    static let requestName = "http_request"

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
        ]
    }

    /// The methods `http_request` offers (its schema's list) and takes: no other reaches the daemon.
    static let methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]

    func call(_ name: String, _ arguments: [String: Value]) async -> CallTool.Result {
        do {
            switch name {
            case Self.listName: return try await list(namespace: arguments["namespace"]?.stringValue)
            case Self.requestName: return try await request(arguments)
            default: return Self.failure("unknown tool '\(name.prefix(100))'")
            }
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

    private static func failure(_ text: String) -> CallTool.Result {
        .init(content: [.text(text: text, annotations: nil, _meta: nil)], isError: true)
    }
}
