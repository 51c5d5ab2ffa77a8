import HTTPTypes
import NIOCore
import NIOHTTPTypes
import TokenVaultCore

/// Answers the hot request, `GET /v1/credentials/{ns}/{name}/token`, on the connection's event
/// loop when the answer is a plain 200: the peer may read tokens in the namespace (its groups
/// already known), the credential exists, and its token is valid for `min_ttl` with no refresh
/// due. That costs one point read from SQLite's page cache and one decryption (about 12 µs),
/// less than the hand-offs between event loop, concurrency pool and blocking pool that the
/// router's path takes (docs/benchmarks.md). It also writes the same audit row and metrics.
///
/// Everything else goes on to the router unchanged, which then produces the answer, including
/// every refusal and every on-demand refresh, exactly as before: another route, a token read
/// that would be refused, refreshed or fail, a request with a body or `Connection` header.
/// While a routed request's response is outstanding, later requests on the connection are
/// routed too, so pipelined responses keep their order.
///
/// Sits after Hummingbird's `HTTPConnectionStateHandler`, so idle timeouts and graceful
/// shutdown see the requests answered here. The read blocks the loop for its duration (on a
/// cold page cache, a disk read), but never waits for a lock: SQLite's busy handler is off for it.
final class TokenFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// The route template under which the router records this route in the metrics.
    static let route = "/v1/credentials/{namespace}/{name}/token"

    private let api: VaultAPI
    private let serverName: String
    /// `SO_PEERCRED`, read once, on the connection's first token request.
    private var peer: PeerCredentials?
    /// A token request whose head has arrived, with when it did: answered at its end, or
    /// routed if a body part comes first.
    private var held: (head: HTTPRequest, target: TokenReadTarget, arrived: ContinuousClock.Instant)?
    /// Requests handed to the router whose response has not ended yet.
    private var routedOutstanding = 0

    init(api: VaultAPI, serverName: String) {
        self.api = api
        self.serverName = serverName
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if routedOutstanding == 0, head.method == .get, head.headerFields[.connection] == nil,
                let target = head.path.flatMap(TokenReadTarget.init)
            {
                held = (head, target, .now)
                return
            }
            route(context, data)
        case .body:
            if let held {
                self.held = nil
                api.metrics.recordFastPath(answered: false)
                route(context, wrapInboundOut(.head(held.head)))
            }
            context.fireChannelRead(data)
        case .end:
            if let held {
                self.held = nil
                if answer(context, held.target, arrived: held.arrived) {
                    api.metrics.recordFastPath(answered: true)
                    return
                }
                api.metrics.recordFastPath(answered: false)
                route(context, wrapInboundOut(.head(held.head)))
            }
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Only the router's responses pass through here; this handler's own go from its context.
        if case .end = unwrapOutboundIn(data) { routedOutstanding = max(0, routedOutstanding - 1) }
        context.write(data, promise: promise)
    }

    private func route(_ context: ChannelHandlerContext, _ head: NIOAny) {
        routedOutstanding += 1
        context.fireChannelRead(head)
    }

    /// Writes the 200 if the request qualifies; false (nothing written) otherwise.
    private func answer(_ context: ChannelHandlerContext, _ target: TokenReadTarget, arrived: ContinuousClock.Instant)
        -> Bool
    {
        if peer == nil { peer = PeerCredentials.readNow(from: context.channel) }
        guard let peer,
            let groups = api.groups.cachedGroups(uid: peer.uid, primaryGID: peer.gid),
            api.policy.allows(uid: peer.uid, groups: groups, .tokenRead, in: target.id.namespace),
            // Never waits for a lock on the loop: a busy database sends the request to the router.
            let credential = try? api.vault.credentialWithoutWaiting(target.id, opening: [.accessToken, .idToken])
        else { return false }
        let metadata = credential.metadata
        let verdict = TokenReadVerdict(
            metadata, minimumTTL: target.minimumTTL, now: api.vault.clock.now, canRefresh: api.engine != nil)
        guard verdict == .serve else { return false }
        api.audit.record(api.auditEvent(peer, "token.read", target.id, .allowed))

        let body = TokenJSON.body(
            accessToken: credential.secrets.accessToken, tokenType: metadata.tokenType ?? "Bearer",
            expiresAt: metadata.expiresAt, idToken: credential.secrets.idToken, allocator: context.channel.allocator)
        let headers: HTTPFields = [
            .contentType: "application/json", .contentLength: String(body.readableBytes), .cacheControl: "no-store",
            .requestID: RequestIDs.next(), .date: HTTPDateHeader.now, .server: serverName,
        ]
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        api.metrics.recordServedToken(duration: .now - arrived)
        return true
    }
}
