import Foundation
import Hummingbird
import Logging
import NIOCore
import TokenVaultCore
import TokenVaultLedger

extension VaultAPI {
    func credentialID(_ context: VaultRequestContext) throws -> CredentialID {
        try CredentialID(
            namespace: context.parameters.get("namespace") ?? "", name: context.parameters.get("name") ?? "")
    }

    /// Bodies are JSON: a declared media type that is not (`application/json` or `…+json`) is 415.
    /// A missing Content-Type is accepted, as `curl -d` users often forget it.
    func requireJSON(_ request: Request) throws {
        guard let declared = request.headers[.contentType] else { return }
        let mediaType = declared.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased()
        guard mediaType == "application/json" || mediaType.hasSuffix("+json") else {
            throw ProblemDetails(
                .unsupportedMediaType,
                detail: "the body must be application/json, not \(mediaType)")
        }
    }

    func collectBody(_ request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: options.maximumBodySize)
        } catch is NIOTooManyBytesError {
            throw ProblemDetails(
                .payloadTooLarge,
                detail: "the request body is larger than \(options.maximumBodySize) bytes")
        }
    }

    /// A JSON object body's members, every one of them in `known` (the one reader of request
    /// bodies: malformed JSON, another shape, or a member nobody reads is a 400 naming it).
    func bodyMembers(_ body: ByteBuffer, known: [String]) throws -> [String: JSONValue] {
        guard case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: body)) else {
            throw VaultError.invalidPayload(
                "the body must be a JSON object {\(known.map { "\"\($0)\"" }.joined(separator: ", "))}")
        }
        if let unknown = fields.keys.filter({ !known.contains($0) }).sorted().first {
            throw VaultError.invalidField(unknown, "is not a known field (\(known.joined(separator: ", ")))")
        }
        return fields
    }

    /// The `provider` member: the name of an instance of `table` (the provider table the request
    /// took: `vault.providers`, read once).
    func provider(_ value: JSONValue?, in table: ProviderTable) throws -> String {
        guard case .string(let provider)? = value else {
            throw VaultError.invalidField("provider", "is required and must be a string")
        }
        let known = table.names
        guard known.contains(provider) else {
            throw VaultError(
                code: .unknownProvider,
                message: "provider '\(provider)' is not configured (known: \(known.sorted().joined(separator: ", ")))")
        }
        return provider
    }

    /// The payload, provider name, labels and planner of a `PUT`, all from one provider table.
    /// What a put stores: tokens the caller holds, or a grant the vault obtains tokens by itself.
    enum PutContent {
        case tokens(TokenPayload, RefreshPlanner?)
        case grant(CredentialGrant)
    }

    /// `provider`, `labels`, and either `token` (the token payload) or `grant`.
    func decodePut(_ body: ByteBuffer) throws -> (PutContent, String, [String: String]) {
        let fields = try bodyMembers(body, known: ["provider", "labels", "token", "grant"])
        let table = vault.providers
        let provider = try provider(fields["provider"], in: table)
        let labels = try decodeLabels(fields["labels"])
        // A member given as null counts as absent.
        let token = fields["token"] == .null ? nil : fields["token"]
        let grant = fields["grant"] == .null ? nil : fields["grant"]
        switch (token, grant) {
        case (.object(let token)?, nil):
            do {
                let decoder = TokenPayloadDecoder(
                    expiredUnit: table.expiredUnit(for: provider), sizes: options.tokenSizes)
                return (.tokens(try decoder.decode(token), table.planner(for: provider)), provider, labels)
            } catch let error as VaultError where error.code == .invalidField {
                // Name the field by its path in the request body.
                throw error.nested(under: "token")
            }
        case (nil, .object(let grant)?):
            do {
                return (.grant(try decodeGrant(grant)), provider, labels)
            } catch let error as VaultError where error.code == .invalidField {
                throw error.nested(under: "grant")
            }
        case (.some, .some):
            throw VaultError.invalidField("grant", "give either token or grant, not both")
        case (nil, let other?):
            throw VaultError.invalidField("grant", "expected an object, got \(other.typeName)")
        case (_, nil):
            throw VaultError.invalidField(
                "token", "is required and must be an object (the token payload), unless a grant is given")
        }
    }

    /// A put's `grant`: `type`, and the `scopes`, `audience` and `resource` the server wants;
    /// a `token_exchange` grant also names its `subject` credential and may ask a
    /// `requested_token_type`, and asks for at least one of audience, resource and scopes (else
    /// it would be the subject's own token by another name). Lists are sets, sorted: repeated
    /// values count once.
    func decodeGrant(_ fields: [String: JSONValue]) throws -> CredentialGrant {
        let known = ["type", "scopes", "audience", "resource", "subject", "requested_token_type"]
        if let unknown = fields.keys.filter({ !known.contains($0) }).sorted().first {
            throw VaultError.invalidField(unknown, "is not a known field (\(known.joined(separator: ", ")))")
        }
        let reader = FieldReader(fields: fields)
        let typeName = try reader.string("type", required: true, maximum: 64) ?? ""
        guard let type = CredentialGrant.GrantType(rawValue: typeName) else {
            throw VaultError.invalidField(
                "type", "must be one of \(CredentialGrant.GrantType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let subject = try reader.string("subject", required: type == .tokenExchange, maximum: 256)
        switch type {
        case .clientCredentials:
            if subject != nil { throw VaultError.invalidField("subject", "only a token_exchange grant has one") }
            if fields["requested_token_type"] != nil {
                throw VaultError.invalidField("requested_token_type", "only a token_exchange grant asks one")
            }
            return CredentialGrant(
                type: type, scopes: Set(try reader.scopes("scopes")).sorted(),
                audiences: Set(try reader.targets("audience")).sorted(),
                resources: Set(try reader.targets("resource")).sorted())
        case .tokenExchange:
            let subjectID: CredentialID
            do {
                subjectID = try CredentialID(subject ?? "")
            } catch {
                throw VaultError.invalidField("subject", error.detail)
            }
            let exchange = try decodeExchange(reader)
            return CredentialGrant(
                type: type, scopes: exchange.scopes, audiences: exchange.audiences, resources: exchange.resources,
                subject: subjectID, requestedTokenType: exchange.requestedTokenType)
        }
    }

    /// The optional `labels` member of a request body: an object of strings.
    func decodeLabels(_ value: JSONValue?) throws -> [String: String] {
        var labels: [String: String] = [:]
        switch value {
        case nil, .null: break
        case .object(let object):
            for (key, value) in object {
                guard case .string(let text) = value else {
                    throw VaultError.invalidField("labels", "values must be strings")
                }
                labels[key] = text
            }
        case let other?: throw VaultError.invalidField("labels", "expected an object, got \(other.typeName)")
        }
        // Checked before anything else happens (an exchange spends a one-time code).
        try Vault.validate(labels: labels)
        return labels
    }

    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: try Self.jsonBody(value)))
    }

    /// A 200 with a JSON body written elsewhere (`MetadataJSON`).
    func json(body: ByteBuffer, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
    }

    /// The answer to a write of a whole credential (a put, a sign-in): its metadata, `201` for a
    /// new credential and `200` for a new generation, with its `Location`; logged as `message`.
    func stored(_ metadata: CredentialMetadata, _ context: VaultRequestContext, logged message: Logger.Message)
        -> Response
    {
        context.logger.info(
            message,
            metadata: [
                "tokenvault.credential.id": "\(metadata.id)",
                "tokenvault.credential.generation": "\(metadata.generation)",
            ])
        var response = json(metadata, status: metadata.generation == 1 ? .created : .ok)
        response.headers[.location] = "/v1/credentials/\(metadata.id.namespace)/\(metadata.id.name)"
        return response
    }

    /// The refresh engine, or `engine_unavailable` for a daemon run without one.
    func requireEngine() throws -> any RefreshService {
        guard let engine else {
            throw ProblemDetails(.engineUnavailable, detail: "this daemon runs without a refresh engine")
        }
        return engine
    }

    /// A credential's metadata, as every route writes it (`MetadataJSON`).
    func json(_ metadata: CredentialMetadata, status: HTTPResponse.Status = .ok) -> Response {
        json(body: MetadataJSON.document(metadata, allocator: ByteBufferAllocator()), status: status)
    }

    /// The one JSON encoding of response documents, for the router and the event loop alike.
    static func jsonBody(_ value: some Encodable) throws -> ByteBuffer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ByteBuffer(bytes: try encoder.encode(value))
    }
}
