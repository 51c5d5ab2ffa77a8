import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import TokenVaultCore

/// Makes plain proxied calls on the event loop (`ProxyFastCall`), beside the router: the
/// router's hand-offs between the event loop, the concurrency pool and AsyncHTTPClient's loops
/// cost several times the call itself (docs/benchmarks.md, "The proxy"). It sits after NIO's HTTP
/// decoder and `HTTPActivityTracker`, so requests arrive parsed, and the tracker and Hummingbird's
/// connection handler see its requests and answers like the router's (idle timeout, keep-alive,
/// graceful shutdown).
///
/// A call is made here when every rule the router would apply already says yes: the caller's
/// groups are cached and give `credential:use`, the credential reads without waiting and its token
/// needs no refresh first, the instance lists the target in `api_base_urls` and is not DPoP, the
/// body is at most `proxy.replay_body_bytes` with a `Content-Length` (no chunks, no `Expect`), and
/// the caller has a free slot (`limits.max_proxy_calls_per_uid`). Anything else goes to the router
/// as it came, which answers it, refusals included, exactly as before. While the router owes an
/// answer, requests go to it; while a call is made here, later requests wait (answers keep the
/// requests' order), and once one waits the connection is not read.
final class ProxyFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let api: VaultAPI
    /// Who is calling: read once by the handler at the front of the pipeline, on the same loop.
    private let peers: PeerCredentialsHandler
    private let pools: UpstreamConnectionPools
    /// This connection's loop's pool, looked up at its first call.
    private var pool: UpstreamConnectionPool?
    /// Requests passed to the router whose answer has not ended.
    private var routed = 0
    /// The caller closed its side while a call was made or requests waited: passed on (it ends
    /// Hummingbird's request loop, which closes the connection) once they are answered.
    private var inputClosedHeld = false
    /// The call made here now, and whether its request's body is still arriving.
    private var call: ProxyFastCall?
    private var receiving = false
    /// Request parts that arrived behind the call (pipelined), taken once it ends.
    private var held = CircularBuffer<HTTPRequestPart>()
    private var readWithheld = false

    init(api: VaultAPI, peers: PeerCredentialsHandler, pools: UpstreamConnectionPools) {
        self.api = api
        self.peers = peers
        self.pools = pools
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        // Behind a call being made, or behind parts already waiting: it waits too.
        guard held.isEmpty, call == nil || receiving else { return held.append(part) }
        take(part, context)
    }

    /// A request part that is not waiting: the body of the call being made, or a request to make
    /// here or to pass to the router.
    private func take(_ part: HTTPRequestPart, _ context: ChannelHandlerContext) {
        if receiving, let call {
            switch part {
            case .body(let bytes): call.append(bytes)
            case .end:
                receiving = false
                call.start()
            case .head: break  // the decoder delivers no head inside a request
            }
            return
        }
        switch part {
        case .head(let head):
            if routed == 0, let id = head.path.flatMap(Self.credentialID(inProxyPath:)), let plan = plan(head, id) {
                let loop = NIOLoopBound(self, eventLoop: context.eventLoop)
                let pool = self.pool ?? pools.pool(on: context.eventLoop)
                self.pool = pool
                call = ProxyFastCall(plan, api: api, context: context, pool: pool) {
                    loop.value.callEnded(context, connectionEnds: $0)
                }
                receiving = true
                return
            }
            routed += 1
        case .body, .end:
            break
        }
        context.fireChannelRead(wrapInboundOut(part))
    }

    private func callEnded(_ context: ChannelHandlerContext, connectionEnds: Bool) {
        call = nil
        receiving = false
        // The caller asked to close, or the answer was cut short: nothing behind it is taken.
        guard context.channel.isActive, !connectionEnds else { return held.removeAll() }
        var passed = false
        while call == nil || receiving, let part = held.popFirst() {
            passed = true
            take(part, context)
        }
        if passed { context.fireChannelReadComplete() }
        // Reading resumes for a call whose body is still to come, too.
        if call == nil || receiving, readWithheld {
            readWithheld = false
            context.read()
        }
        if call == nil, held.isEmpty, inputClosedHeld {
            inputClosedHeld = false
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed, call != nil || !held.isEmpty {
            inputClosedHeld = true
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func read(context: ChannelHandlerContext) {
        // Once a request waits behind the call being made, the connection is not read: more
        // would only wait in memory. (Withholding every read during a call would cost two
        // `epoll_ctl` calls per call.)
        if call != nil, !receiving, !held.isEmpty {
            readWithheld = true
        } else {
            context.read()
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { routed = max(0, routed - 1) }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        call?.callerGone()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        call?.callerWritable()
        context.fireChannelWritabilityChanged()
    }

    /// The call, if every rule says it may be made here; nil sends the request to the router.
    private func plan(_ head: HTTPRequest, _ id: CredentialID) -> ProxyFastCall.Plan? {
        let fields = head.headerFields
        let proxy = api.options.proxy
        guard VaultAPI.proxyMethods.contains(head.method), let path = head.path,
            fields[.transferEncoding] == nil, fields[.expect] == nil,
            let length = fields[.contentLength].map({ Int($0) }) ?? 0,
            length <= min(proxy.replayBodyBytes, proxy.maximumRequestBytes),
            let upstream = api.options.upstream,
            let peer = peers.peer,
            let groups = api.groups.cachedGroups(uid: peer.uid, primaryGID: peer.gid),
            api.policy.allows(uid: peer.uid, groups: groups, .credentialUse, in: id.namespace),
            let credential = try? api.vault.credentialWithoutWaiting(id, opening: [.accessToken]),
            TokenReadVerdict(
                credential.metadata, minimumTTL: Double(proxy.minimumTTLSeconds), now: api.vault.clock.now,
                canRefresh: api.engine != nil) == .serve,
            let settings = api.vault.providers.settings[credential.metadata.provider],
            !settings.apiBases.isEmpty, !settings.dpop,
            let target = try? api.proxyTarget(
                path: path, absoluteURL: fields[.tokenVaultUpstreamURL], chosenBase: fields[.tokenVaultUpstreamBase],
                id: id, bases: settings.apiBases, provider: settings.name),
            let transport = try? upstream.transport(for: settings),
            api.limiter.admitProxyCall(uid: peer.uid)
        else {
            api.metrics.recordProxyFastPath(answered: false)
            return nil
        }
        api.metrics.recordProxyFastPath(answered: true)
        return .init(
            peer: peer, id: id, provider: settings.name, method: head.method, target: target, transport: transport,
            forwarded: ProxyHeaders.forward(fields),
            closesConnection: fields[values: .connection].contains {
                $0.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "close" }
            },
            route: Self.route(of: path), credential: credential)
    }

    /// The route template the router records a proxied call under: `…/proxy`, or `…/proxy/**`
    /// with a path after it.
    static func route(of path: String) -> String {
        // Something after the fifth segment's `/`, before any query: what splitting the path at
        // `/` (empty segments dropped, at most five splits) would see, without the arrays.
        var segments = 0
        var inSegment = false
        var afterFifth = false
        for byte in path.utf8 {
            if byte == UInt8(ascii: "?") { break }
            if afterFifth { return proxyRestRoute }
            if byte == UInt8(ascii: "/") {
                afterFifth = inSegment && segments == 5
                inSegment = false
            } else if !inSegment {
                inSegment = true
                segments += 1
            }
        }
        return proxyRoute
    }

    private static let proxyRoute = "/v1/credentials/{namespace}/{name}/proxy"
    private static let proxyRestRoute = proxyRoute + "/**"

    /// The credential a proxy path names: `/v1/credentials/{ns}/{name}/proxy`, then nothing, `/…`
    /// or `?…`. (`VaultAPI.proxyTarget` checks the rest, as for the router.)
    static func credentialID(inProxyPath path: String) -> CredentialID? {
        let prefix = "/v1/credentials/"
        guard path.hasPrefix(prefix) else { return nil }
        let segments = path.dropFirst(prefix.count).split(
            separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        guard segments.count >= 3, segments[2] == "proxy" || segments[2].hasPrefix("proxy?") else { return nil }
        return try? CredentialID(namespace: String(segments[0]), name: String(segments[1]))
    }
}

@available(*, unavailable)
extension ProxyFastPath: Sendable {}
