import HTTPTypes
import NIOCore
import TokenVaultCore

/// Answers the hot request, `GET /v1/credentials/{ns}/{name}/token`, straight from the bytes
/// the socket delivered, when the answer is a plain 200 (and, the same way, a credential's
/// metadata, a page of the listing kept from an earlier read (`RenderedPages`), the health
/// check while the database's last answer is recent, and the 404 of a path no route has:
/// `FastTarget`): the peer may read tokens in the
/// namespace (its groups already known), the credential exists, and its token is valid for
/// `min_ttl` with no refresh due. That costs one point read from SQLite's page cache and one
/// decryption (about 12 µs). The HTTP decoder, the header conversions and the router's hand-offs
/// between event loop, concurrency pool and blocking pool cost several times that
/// (docs/benchmarks.md, "Local API"). It writes the same body, headers, audit row and metrics.
///
/// It sits first in the connection's pipeline and delimits requests with `HTTPRequestFraming`.
/// Every request it does not answer goes on to NIO's decoder and the router as the very bytes
/// received: another route, a token read that would be refused, refreshed or fail, a request
/// with a body, `Connection` or `Expect` header. Once a request is not plainly framed
/// (chunked, HTTP/1.0, anything odd), the connection's remaining bytes all go to the decoder.
/// While the router owes a response, later requests are routed too, so pipelined responses
/// keep their order. `HTTPActivityTracker` keeps the idle timeout, seeing both paths.
///
/// The read blocks the loop for its duration (on a cold page cache, a disk read), but never
/// waits for a lock: SQLite's busy handler is off for it.
final class TokenFastPath: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let api: VaultAPI
    private let serverName: String
    let tracker: HTTPActivityTracker
    /// Who is calling: read once by the handler in front of this one, on the same event loop.
    let peers: PeerCredentialsHandler
    /// Received bytes not yet answered or passed on: the start of a request whose head is incomplete.
    private var pending: ByteBuffer?
    /// Body bytes of a routed request still to pass on to the decoder.
    private var bodyToRoute = 0
    /// Set once a request is not plainly framed, and on graceful shutdown: from then on, every
    /// byte goes to the decoder.
    private var routesEverything = false

    init(api: VaultAPI, serverName: String, tracker: HTTPActivityTracker, peers: PeerCredentialsHandler) {
        self.api = api
        self.serverName = serverName
        self.tracker = tracker
        self.peers = peers
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        tracker.noteBytesArrived()
        guard !routesEverything else { return context.fireChannelRead(data) }
        process(context, unwrapInboundIn(data))
    }

    /// Answers or passes on the requests in `input`.
    private func process(_ context: ChannelHandlerContext, _ input: ByteBuffer) {
        var input = input
        if var earlier = pending {
            pending = nil
            earlier.writeBuffer(&input)
            input = earlier
        }
        var answered = false
        while input.readableBytes > 0 {
            if bodyToRoute > 0 {
                let chunk = input.readSlice(length: min(bodyToRoute, input.readableBytes))!
                bodyToRoute -= chunk.readableBytes
                context.fireChannelRead(wrapInboundOut(chunk))
                continue
            }
            let outcome = input.withUnsafeReadableBytes { HTTPRequestFraming.parse($0) }
            switch outcome {
            case .incomplete:
                pending = input
                input.moveReaderIndex(to: input.writerIndex)
            case .unsupported:
                routesEverything = true
                context.fireChannelRead(wrapInboundOut(input))
                input.moveReaderIndex(to: input.writerIndex)
            case .request(let request):
                if handle(context, request, in: input) {
                    input.moveReaderIndex(forwardBy: request.headLength)
                    answered = true
                } else {
                    context.fireChannelRead(wrapInboundOut(input.readSlice(length: request.headLength)!))
                    bodyToRoute = request.bodyLength
                }
            }
        }
        if answered { context.flush() }
    }

    /// Answers the request if it is one the fast path can serve.
    private func handle(_ context: ChannelHandlerContext, _ request: HTTPRequestFraming, in input: ByteBuffer) -> Bool {
        guard request.isGet,
            let target = input.withUnsafeReadableBytes({
                FastTarget(bytes: UnsafeRawBufferPointer(rebasing: $0[request.target]), routes: api.routes)
            })
        else { return false }
        let arrived = ContinuousClock.now
        let answerable = request.isPlain && tracker.answersOwed == 0
        guard case .token(let read) = target else {
            guard answerable, let status = answer(context, target) else { return false }
            tracker.noteAnswered(at: arrived)
            api.metrics.recordFastAnswer(route: target.route, status: status, duration: .now - arrived)
            return true
        }
        guard answerable, answer(context, read) else {
            api.metrics.recordFastPath(answered: false)
            return false
        }
        tracker.noteAnswered(at: arrived)
        api.metrics.recordFastPath(answered: true)
        api.metrics.recordServedToken(duration: .now - arrived)
        return true
    }

    /// Writes the router's answer to a health check, a credential's metadata, a page of the
    /// listing or a path no route has, and returns its status; nil (nothing written) when the
    /// router must answer: the database's last answer for health is older than a second, the
    /// caller's groups are not known or do not allow the read, the row or page is not at hand.
    private func answer(_ context: ChannelHandlerContext, _ target: FastTarget) -> Int? {
        let body: ByteBuffer
        switch target {
        case .token:
            return nil
        case .health:
            guard let schemaVersion = api.schemaVersionRead.recent,
                let document = try? api.healthBody.body(api.healthDocument(schemaVersion: schemaVersion))
            else { return nil }
            body = document
        case .show(let id):
            guard let (peer, groups) = knownCaller,
                api.policy.allows(uid: peer.uid, groups: groups, .credentialList, in: id.namespace),
                let metadata = try? api.vault.metadataWithoutWaiting(id),
                // One a device sign-in may be under way for is shown by the router (`shownMetadata`).
                !metadata.status.awaitsSignIn
            else { return nil }
            api.audit.record(api.auditEvent(peer, .credentialShow, id, .allowed))
            body = MetadataJSON.document(metadata, allocator: context.channel.allocator)
        case .list(let listing):
            guard let (peer, groups) = knownCaller,
                case .query(let query) = listing.scoped(
                    to: api.policy.namespaces(uid: peer.uid, groups: groups, with: .credentialList)),
                let page = api.pages.page(for: query)
            else { return nil }
            body = page
        case .unmatched:
            guard let notFound = Self.notFound else { return nil }
            let requestID = RequestIDs.next()
            var document = context.channel.allocator.buffer(capacity: notFound.prefix.count + 96)
            document.writeBytes(notFound.prefix)
            document.writeString(requestID)
            document.writeBytes(notFound.suffix)
            let response = FastResponse.make(
                status: "404 Not Found", contentType: "application/problem+json", body: document,
                requestID: requestID, serverName: serverName, allocator: context.channel.allocator)
            context.write(wrapOutboundOut(response), promise: nil)
            return 404
        }
        let response = FastResponse.make(
            status: "200 OK", contentType: "application/json", body: body, requestID: RequestIDs.next(),
            serverName: serverName, allocator: context.channel.allocator)
        context.write(wrapOutboundOut(response), promise: nil)
        return 200
    }

    /// The peer and its groups, when both are known without a lookup: the first request of a uid
    /// not seen before goes to the router, which looks its groups up off the loop.
    private var knownCaller: (peer: PeerCredentials, groups: Set<UInt32>)? {
        guard let peer = peers.peer, let groups = api.groups.cachedGroups(uid: peer.uid, primaryGID: peer.gid)
        else { return nil }
        return (peer, groups)
    }

    /// Writes the 200 if the read qualifies; false (nothing written) otherwise.
    private func answer(_ context: ChannelHandlerContext, _ target: TokenReadTarget) -> Bool {
        guard let (peer, groups) = knownCaller,
            api.policy.allows(uid: peer.uid, groups: groups, .tokenRead, in: target.id.namespace),
            // Never waits for a lock on the loop: a busy database sends the request to the router.
            let credential = try? api.vault.credentialWithoutWaiting(target.id, opening: SealedField.served)
        else { return false }
        let metadata = credential.metadata
        let verdict = TokenReadVerdict(
            metadata, minimumTTL: target.minimumTTL, clock: api.vault.clock, canRefresh: api.engine != nil)
        guard verdict == .serve else { return false }
        let body = api.servedToken(credential, to: peer, allocator: context.channel.allocator)
        let response = FastResponse.make(
            status: "200 OK", contentType: "application/json", headers: TokenJSON.cacheControlLine, body: body,
            requestID: RequestIDs.next(), serverName: serverName, allocator: context.channel.allocator)
        context.write(wrapOutboundOut(response), promise: nil)
        return true
    }

    /// The router's 404 document (`ProblemDetails.document`, rendered once with a marker for the
    /// request id), as the bytes before and after the id: only the id differs between requests.
    private static let notFound: (prefix: [UInt8], suffix: [UInt8])? = {
        let marker = Array("tokenvault-request-id-marker".utf8)
        guard
            let (_, document) = try? ProblemDetails(.notFound, detail: "Not Found").document(
                requestID: String(decoding: marker, as: UTF8.self))
        else { return nil }
        let bytes = Array(buffer: document)
        guard let start = bytes.indices.first(where: { bytes[$0...].starts(with: marker) }) else { return nil }
        return (Array(bytes[..<start]), Array(bytes[(start + marker.count)...]))
    }()

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed, is ChannelShouldQuiesceEvent:
            passOnOnceWritten(context, event)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// The caller's half-close, or graceful shutdown: the decoder and the router get every byte
    /// from now on (an incomplete request goes to the decoder, which reports it as it always
    /// did), and the event once what was written has gone. Hummingbird closes the connection
    /// once the router owes nothing, which would drop an answer of ours still queued behind a
    /// full socket buffer. Writes complete in order, so an empty write completing means every
    /// answer before it has reached the socket.
    private func passOnOnceWritten(_ context: ChannelHandlerContext, _ event: Any) {
        routeEverythingFromNowOn(context)
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: written)
        let loopBound = NIOLoopBound((context, event), eventLoop: context.eventLoop)
        written.futureResult.whenComplete { _ in
            let (context, event) = loopBound.value
            context.fireUserInboundEventTriggered(event)
        }
    }

    private func routeEverythingFromNowOn(_ context: ChannelHandlerContext) {
        routesEverything = true
        if let pending {
            self.pending = nil
            context.fireChannelRead(wrapInboundOut(pending))
        }
    }
}

@available(*, unavailable)
extension TokenFastPath: Sendable {}
