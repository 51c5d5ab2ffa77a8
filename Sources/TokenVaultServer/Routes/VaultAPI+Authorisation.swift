import Hummingbird
import TokenVaultCore

extension VaultAPI {
    /// Who is calling: the kernel's peer credentials and every group the uid belongs to.
    func caller(_ context: VaultRequestContext) async throws -> (peer: PeerCredentials, groups: Set<UInt32>) {
        let peer = try PeerCredentials.of(context.channel)
        return (peer, try await groups.groups(uid: peer.uid, primaryGID: peer.gid))
    }

    /// The peer, if it holds `permission` in the credential's namespace; otherwise an audit row
    /// and 403.
    func authorise(
        _ context: VaultRequestContext, _ permission: Permission, id: CredentialID, operation: AuditOperation
    )
        async throws -> PeerCredentials
    {
        try await authorisedCaller(context, permission, id: id, operation: operation).peer
    }

    /// `authorise`, with the caller's groups (a stream judges each event by them).
    func authorisedCaller(
        _ context: VaultRequestContext, _ permission: Permission, id: CredentialID, operation: AuditOperation
    ) async throws -> (peer: PeerCredentials, groups: Set<UInt32>) {
        let (peer, memberOf) = try await caller(context)
        guard policy.allows(uid: peer.uid, groups: memberOf, permission, in: id.namespace) else {
            throw await deny(
                peer, groups: memberOf, context, operation: operation, id: id, namespace: id.namespace,
                permission: permission)
        }
        return (peer, memberOf)
    }

    /// The peer, if it is an admin (its own uid, root, or an `admin` rule for all namespaces).
    func authoriseAdmin(_ context: VaultRequestContext, operation: AuditOperation) async throws -> PeerCredentials {
        let (peer, memberOf) = try await caller(context)
        guard policy.allows(uid: peer.uid, groups: memberOf, .admin, in: nil) else {
            throw await deny(peer, groups: memberOf, context, operation: operation, namespace: nil, permission: .admin)
        }
        return peer
    }

    /// The peer and its groups, if it may list credentials in at least one namespace; otherwise an
    /// audit row and 403. (Which namespaces' events it sees is decided at each event.)
    func authoriseEventStream(_ context: VaultRequestContext) async throws -> (
        peer: PeerCredentials, groups: Set<UInt32>
    ) {
        let (peer, memberOf) = try await caller(context)
        let visible = policy.namespaces(uid: peer.uid, groups: memberOf, with: .credentialList)
        guard visible != [] else {
            throw await deny(
                peer, groups: memberOf, context, operation: .eventsStream, namespace: nil, permission: .credentialList
            )
        }
        return (peer, memberOf)
    }

    /// An audit row, a log line and the 403. A caller no rule grants anything at all also loses
    /// its connection once the 403 is written: it has nothing to keep one open for.
    func deny(
        _ peer: PeerCredentials, groups: Set<UInt32>, _ context: VaultRequestContext, operation: AuditOperation,
        id: CredentialID? = nil, namespace: String?, permission: Permission
    ) async -> ProblemDetails {
        audit.record(auditEvent(peer, operation, id, .denied, detail: "missing \(permission.rawValue)"))
        context.logger.notice(
            "request denied",
            metadata: [
                "tokenvault.peer.uid": "\(peer.uid)", "tokenvault.peer.pid": "\(peer.pid)",
                "tokenvault.operation": "\(operation)",
            ])
        let scope = namespace.map { "namespace '\($0)'" } ?? "any namespace"
        var problem = ProblemDetails(
            .forbidden, detail: "uid \(peer.uid) lacks \(permission.rawValue) in \(scope)",
            permission: permission.rawValue)
        problem.closesConnection = !policy.grantsAnything(uid: peer.uid, groups: groups)
        return problem
    }

    func auditEvent(
        _ peer: PeerCredentials, _ operation: AuditOperation, _ id: CredentialID?, _ outcome: AuditEvent.Outcome,
        detail: String? = nil
    ) -> AuditEvent {
        AuditEvent(
            at: vault.clock.now, uid: peer.uid, gid: peer.gid, pid: peer.pid, operation: operation, credentialID: id,
            outcome: outcome, detail: detail)
    }

}
