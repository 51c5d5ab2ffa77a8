import Hummingbird
import TokenVaultCore

/// `/v1/admin/providers/{provider}`: an instance as the daemon uses it. For an `oauth2` instance,
/// the endpoints it found in the server's metadata (read now if not yet), how it authenticates
/// and checks id tokens; and at `/jwks`, the public key set to register at the server for
/// `private_key_jwt` (derived here, without asking the server). Public data, but an operator's:
/// both need `admin`.
extension VaultAPI {
    func providerDetails(_ context: VaultRequestContext) async throws -> Response {
        let (peer, name, kind, described) = try await providerInstance(context)
        var document: [String: JSONValue] = ["name": .string(name), "kind": .string(kind)]
        if let described {
            let found: [String: JSONValue]
            do throws(ProviderFailure) {
                found = try await described.details()
            } catch {
                let failure = error
                audit.record(auditEvent(peer, .adminProvider, nil, .failed, detail: failure.code.rawValue))
                throw ProblemDetails(
                    .providerUnavailable,
                    detail: "the metadata of \(name) could not be read: \(failure.code): \(failure.message)",
                    retryAfter: failure.retryAfterWholeSeconds)
            }
            document.merge(found) { $1 }
        }
        audit.record(auditEvent(peer, .adminProvider, nil, .allowed, detail: name))
        return try json(JSONValue.object(document))
    }

    func providerKeys(_ context: VaultRequestContext) async throws -> Response {
        let (peer, name, _, described) = try await providerInstance(context)
        guard let keys = try described?.clientKeySet() else {
            throw VaultError(
                code: .invalidRequest,
                message: "provider instance \(name) has no client key: only an oauth2 instance with endpoints has one")
        }
        audit.record(auditEvent(peer, .adminProvider, nil, .allowed, detail: name + " jwks"))
        return try json(keys)
    }

    /// The caller (an admin), and the name, kind and introspection (an `oauth2` instance's) of the
    /// instance the path names; 404 when none has that name.
    private func providerInstance(_ context: VaultRequestContext) async throws -> (
        peer: PeerCredentials, name: String, kind: String, described: (any ProviderIntrospection)?
    ) {
        let peer = try await authoriseAdmin(context, operation: .adminProvider)
        let name = context.parameters.get("provider") ?? ""
        guard let instance = try requireEngine().providerInstance(named: name) else {
            throw VaultError(code: .unknownProvider, message: "no provider instance is named '\(name.prefix(64))'")
        }
        var described: (any ProviderIntrospection)?
        if let provider = instance.provider { described = provider as? any ProviderIntrospection }
        return (peer, name, instance.kind, described)
    }
}
