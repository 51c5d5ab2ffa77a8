import Foundation
import Hummingbird
import NIOCore
import TokenVaultCore

/// NDJSON streams: `GET .../watch` (one credential's metadata document at once, then again on
/// each change; the stream ends when the credential is deleted, or when the device sign-in that
/// was to create it fails) and `GET /v1/events` (an
/// `EventDocument` per change of any credential the caller may list). Never a token. Streams
/// also end when the client goes away or the daemon shuts down. A caller may hold at most
/// `limits.max_streams_per_uid` open (`429 too_many_streams` beyond), and every stream gets an
/// empty line each `limits.stream_heartbeat_seconds` (a caller that went away is noticed then).
/// Each event, and each heartbeat, is judged by the access rules in force and the caller's groups
/// as they are then (read again once the membership cache's entry is older than
/// `server.group_refresh_seconds`): a reload that takes the permission away, or a caller removed
/// from the group that gave it, ends the stream at the next event or heartbeat.
extension VaultAPI {
    func watch(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let id = try credentialID(context)
        let (peer, _) = try await authorisedCaller(context, .credentialList, id: id, operation: .credentialWatch)
        let slot = try streamSlot(for: peer)
        // Subscribe before reading the state, so no change falls between the two.
        let events = vault.events.subscribe(to: id)
        let current = try await vault.shownMetadata(id)
        return ndjson(events, peer: peer, slot: slot, first: [Self.line(current)]) {
            event, last, groups in
            // The rules in force now, for the groups the caller is in now.
            guard policy.allows(uid: peer.uid, groups: groups, .credentialList, in: id.namespace) else { return .end }
            guard let event else { return await lookAgainIfPending(id, shown: last ?? current) }
            if event.kind == .deleted { return .end }
            // The device sign-in that was to create the credential failed, and no other waits:
            // there is none to watch.
            if event.kind == .authorizationFailed, event.metadata == nil { return .end }
            guard let metadata = event.metadata, !Self.sameState(metadata, last ?? current) else { return .skip }
            return .write(Self.line(metadata), metadata)
        }
    }

    /// At a heartbeat of the watch of a credential shown `pending_authorization`: its device
    /// sign-in may have ended on another node of a PostgreSQL vault, whose change may not have
    /// reached this one (its listener reconnecting), so the state is read again. Nothing is read
    /// for any other state.
    private func lookAgainIfPending(_ id: CredentialID, shown: CredentialMetadata) async -> StreamStep {
        guard shown.status == .pendingAuthorization else { return .skip }
        do {
            let now = try await vault.shownMetadata(id)
            return Self.sameState(now, shown) ? .skip : .write(Self.line(now), now)
        } catch let error as VaultError where error.code == .credentialNotFound {
            return .end
        } catch {
            return .skip
        }
    }

    /// Events of every credential in the namespaces where the caller holds `credential:list`.
    func eventStream(_ request: Request, _ context: VaultRequestContext) async throws -> Response {
        let (peer, _) = try await authoriseEventStream(context)
        let slot = try streamSlot(for: peer)
        let events = vault.events.subscribe()
        return ndjson(events, peer: peer, slot: slot, first: []) { event, _, groups in
            // The rules in force now, for the groups the caller is in now.
            let visible = policy.namespaces(uid: peer.uid, groups: groups, with: .credentialList)
            if visible == [] { return .end }
            guard let event else { return .skip }
            guard visible?.contains(event.id.namespace) ?? true, let document = EventDocument(event) else {
                return .skip
            }
            return .write(try Self.line(document), nil)
        }
    }

    /// What a stream does with one event.
    enum StreamStep {
        case write(ByteBuffer, CredentialMetadata?)
        case skip
        case end
    }

    /// Holds one of the caller's stream slots until the stream's body is released.
    final class StreamSlot: Sendable {
        let limiter: ConnectionLimiter
        let uid: UInt32
        init(limiter: ConnectionLimiter, uid: UInt32) {
            self.limiter = limiter
            self.uid = uid
        }
        deinit { limiter.releaseStream(uid: uid) }
    }

    private func streamSlot(for peer: PeerCredentials) throws -> StreamSlot {
        guard limiter.admitStream(uid: peer.uid) else {
            throw ProblemDetails(
                .tooManyStreams,
                detail: "uid \(peer.uid) has \(options.connections.maximumStreamsPerUID) streams open already "
                    + "(limits.max_streams_per_uid); close one first", retryAfter: 1)
        }
        return StreamSlot(limiter: limiter, uid: peer.uid)
    }

    /// The stream's body: `first` lines, then a line per event `step` chooses, and an empty line
    /// whenever `streamHeartbeatSeconds` pass without one. `step` is asked at each event and at
    /// each heartbeat (a nil event), with the caller's groups as they are then, and may end it.
    private func ndjson(
        _ events: AsyncStream<CredentialEvent>, peer: PeerCredentials, slot: StreamSlot, first: [ByteBuffer],
        step: @escaping @Sendable (CredentialEvent?, CredentialMetadata?, Set<UInt32>) async throws -> StreamStep
    ) -> Response {
        let heartbeat = Duration.seconds(options.connections.streamHeartbeatSeconds)
        return Response(
            status: .ok, headers: [.contentType: "application/x-ndjson", .cacheControl: TokenJSON.cacheControl],
            body: ResponseBody { writer in
                // The caller's stream slot is held until the stream ends.
                defer { withExtendedLifetime(slot) {} }
                for line in first { try await writer.write(line) }
                var last: CredentialMetadata?
                streaming: for await item in Self.withHeartbeats(events, every: heartbeat) {
                    let groups = try await groups.groups(uid: peer.uid, primaryGID: peer.gid)
                    switch try await step(item, last, groups) {
                    case .write(let line, let metadata):
                        try await writer.write(line)
                        last = metadata ?? last
                    case .skip:
                        if item == nil { try await writer.write(ByteBuffer(string: "\n")) }
                    case .end: break streaming
                    }
                }
                try await writer.finish(nil)
            })
    }

    /// The events, with a nil whenever `every` passes without one. Ends when the events end.
    static func withHeartbeats(_ events: AsyncStream<CredentialEvent>, every interval: Duration)
        -> AsyncStream<CredentialEvent?>
    {
        AsyncStream { continuation in
            let forward = Task {
                for await event in events { continuation.yield(event) }
                continuation.finish()
            }
            let beat = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    if Task.isCancelled { break }
                    continuation.yield(nil)
                }
            }
            continuation.onTermination = { _ in
                forward.cancel()
                beat.cancel()
            }
        }
    }

    /// A change a watcher has already seen (same generation, status and error) is not repeated.
    static func sameState(_ a: CredentialMetadata, _ b: CredentialMetadata) -> Bool {
        a.generation == b.generation && a.status == b.status && a.lastError?.code == b.lastError?.code
    }

    static func line(_ document: some Encodable) throws -> ByteBuffer {
        var line = try jsonBody(document)
        line.writeStaticString("\n")
        return line
    }

    /// A credential's metadata as one line of a stream.
    static func line(_ metadata: CredentialMetadata) -> ByteBuffer {
        var line = MetadataJSON.document(metadata, allocator: ByteBufferAllocator())
        line.writeStaticString("\n")
        return line
    }
}
