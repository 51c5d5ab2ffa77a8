import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import TokenVaultCore
import TokenVaultProviders

/// One proxied call `TokenFastPath` makes on the event loop, from the request's bytes to the
/// answer's: the same call the router's proxy route makes (`VaultAPI.proxy`), with the same
/// rules, audit rows, metrics and answers, minus the router's hand-offs between threads and the
/// HTTP codec on the caller's side (a profile put a third of such a call's CPU there). The
/// request body is whole before the call starts (at most `proxy.replay_body_bytes`), so a 401
/// that refuses the token gets one refresh through the engine and one replay. The answer streams
/// back as it arrives, framed by its own `Content-Length` or chunked, and the upstream is read no
/// faster than the caller takes it.
///
/// The event loop makes a call when every rule the router would apply already says yes
/// (`Plan.make`); anything else goes to the router as it came, which answers it, refusals
/// included, exactly as before.
final class ProxyFastCall {
    /// What was decided before the call, all of it by the rules the router applies.
    struct Plan {
        let peer: PeerCredentials
        let id: CredentialID
        let provider: String
        let method: HTTPRequest.Method
        let target: UpstreamURL
        let transport: UpstreamTransport
        /// The caller's headers that go upstream (`ProxyHeaders.forward`).
        let forwarded: [(name: String, value: String)]
        /// The caller sent `Connection: close`: the connection ends with the answer.
        let closesConnection: Bool
        /// The route template the router would record the call under (`RequestMetricsMiddleware`).
        let route: String
        var credential: Credential
    }

    private enum Phase {
        /// Sent, or connecting to send; no answer yet.
        case waiting
        /// The upstream refused the token: its 401 is kept while the token is renewed.
        case refused
        case renewing
        /// The answer's head went to the caller; its body follows.
        case streaming
        case done
    }

    /// A refused token's 401 kept beyond this is returned as it came, without a refresh.
    static let maximumKeptRefusal = 64 << 10

    private let api: VaultAPI
    private let context: ChannelHandlerContext
    private let pool: UpstreamConnectionPool
    private let key: UpstreamConnectionPool.Key
    private var plan: Plan
    private let body: ByteBuffer?
    private var phase = Phase.waiting
    /// The answer's body is chunked by the daemon (the upstream gave no `Content-Length`).
    private var chunked = false
    private var link: UpstreamLink?
    /// The answer the link brings keeps the connection open for the next call.
    private var linkStaysOpen = false
    /// The request went with `Connection: close` (`ProxyHeaders.endsConnection`).
    private var endsLink = false
    private var refusal: (head: HTTPResponseHead, body: ByteBuffer)?
    /// An informational answer (1xx, such as 103 Early Hints) is under way: not the call's answer.
    private var informational = false
    private var refreshed = false
    /// Every token the call carried (the refused one too, after a refresh), as on the router's
    /// path: an answer's headers are searched for each.
    private var carriedTokens: [SecretBytes]
    /// The caller left before the answer's head: the call goes on to it, as on the router's path,
    /// so that a request the upstream may have acted on is audited.
    private var callerLeft = false
    private var retried = false
    private var bodyBytes = 0
    private let started = ContinuousClock.now
    private let requestID = RequestIDs.next()
    /// Told when the call is over, and whether the caller's connection ends with it (then no
    /// request behind it is taken).
    private let ended: (_ connectionEnds: Bool) -> Void
    /// The caller's connection is closed, or closes once the answer is written.
    private var connectionEnds = false
    /// When the call must be over (`proxy.deadline_seconds`).
    private var callDeadline = NIODeadline.distantFuture
    /// When the upstream last sent bytes, or the request went to it: `timeout_seconds` after it,
    /// with nothing more, the read times out, as on the router's path.
    private var lastRead = NIODeadline.distantFuture
    /// One timer watches both: moved back only when a new wait ends sooner, not at every read
    /// (a schedule and a cancel per read cost more than the comparison when it fires).
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?

    /// `context`: the caller's connection, at the front of its pipeline (bytes are written).
    init(
        _ plan: Plan, body: ByteBuffer?, api: VaultAPI, context: ChannelHandlerContext, pool: UpstreamConnectionPool,
        ended: @escaping (_ connectionEnds: Bool) -> Void
    ) {
        self.plan = plan
        carriedTokens = [plan.credential.secrets.accessToken]
        self.body = body
        self.api = api
        self.context = context
        self.pool = pool
        self.key = .init(transport: plan.transport, origin: plan.target.origin)
        self.ended = ended
    }

    /// The call starts, under `proxy.deadline_seconds`.
    func start() {
        let now = NIODeadline.now()
        callDeadline = now + .seconds(Int64(api.options.proxy.deadlineSeconds))
        // The request goes out now, or as soon as a connection is made: checked then.
        arm(at: min(callDeadline, now + readTimeout))
        send()
    }

    /// The caller's connection closed. Once the request may have gone out, the call waits for the
    /// answer's head (or its end by failure or deadline) to audit it, as the router's path does;
    /// nothing more is read.
    func callerGone() {
        guard phase != .done else { return }
        connectionEnds = true
        switch phase {
        case .waiting, .refused, .renewing:
            callerLeft = true
        case .streaming, .done:
            finish(keepingLink: false)
        }
    }

    /// The caller's socket takes bytes again: read on from the upstream.
    func callerWritable() {
        if context.channel.isWritable { link?.handler.resume() }
    }

    // MARK: Upstream

    /// On a kept connection, or a new one (`fresh`: after a kept one failed).
    private func send(fresh: Bool = false) {
        if !fresh, let link = pool.take(key) {
            return transmit(on: link)
        }
        let loop = NIOLoopBound(self, eventLoop: context.eventLoop)
        pool.connect(to: plan.target, with: plan.transport).whenComplete { result in
            let call = loop.value
            switch result {
            case .success(let link):
                guard call.phase == .waiting else { return link.channel.close(promise: nil) }
                call.transmit(on: link)
            case .failure(let error):
                guard call.phase == .waiting else { return }
                let origin = call.plan.target.origin
                let timedOut = (error as? ChannelError).map { if case .connectTimeout = $0 { true } else { false } }
                call.fail(
                    timedOut == true
                        ? ProblemDetails(
                            .upstreamTimeout, detail: "\(origin) did not answer in time: the connection timed out")
                        : ProblemDetails(
                            .upstreamUnavailable, detail: "\(origin) could not be reached: \(VaultAPI.reason(error))"))
            }
        }
    }

    private func transmit(on link: UpstreamLink) {
        self.link = link
        link.handler.receiver = { [self] event in upstream(event) }
        let target = plan.target
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: target.authority)
        for (name, value) in plan.forwarded { headers.add(name: name, value: value) }
        headers.replaceOrAdd(name: "Authorization", value: VaultAPI.authorization(plan.credential, dpop: false))
        let length = body?.readableBytes ?? 0
        if length > 0 || [.post, .put, .patch].contains(plan.method) {
            headers.add(name: "Content-Length", value: String(length))
        }
        endsLink = ProxyHeaders.endsConnection(method: plan.method, hasBody: length > 0)
        if endsLink { headers.add(name: "Connection", value: "close") }
        let uri = target.path + (target.query.map { "?" + $0 } ?? "")
        let head = HTTPRequestHead(
            version: .http1_1, method: HTTPMethod(rawValue: plan.method.rawValue), uri: uri, headers: headers)
        let channel = link.channel
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        if let body, length > 0 { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        // Writing may have ended the call at once (a kept connection found closed).
        guard phase != .done else { return }
        link.handler.resume()
        lastRead = .now()
        arm(at: nextCheck)
    }

    private var readTimeout: TimeAmount { .nanoseconds(Int64(plan.transport.timeouts.readSeconds * 1e9)) }

    /// The deadline, or sooner the end of the wait for the upstream's next bytes while a
    /// connection carries the call.
    private var nextCheck: NIODeadline { link == nil ? callDeadline : min(callDeadline, lastRead + readTimeout) }

    /// The timer fires at `at` unless it already fires sooner.
    private func arm(at deadline: NIODeadline) {
        guard phase != .done else { return }
        if let timer, timer.at <= deadline { return }
        timer?.task.cancel()
        let task = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(deadline: deadline) {
            self.timerFired()
        }
        timer = (task, deadline)
    }

    private func timerFired() {
        timer = nil
        guard phase != .done else { return }
        let now = NIODeadline.now()
        if now >= callDeadline { return deadlinePassed() }
        if link != nil, now >= lastRead + readTimeout {
            // Held back for a slow caller, the upstream is not the one waiting: its wait starts again.
            let paused = link?.handler.isPaused == true
            lastRead = now
            if !paused { readTimedOut() }
        }
        if phase != .done { arm(at: nextCheck) }
    }

    private func readTimedOut() {
        switch phase {
        case .waiting, .refused:
            fail(
                ProblemDetails(
                    .upstreamTimeout, detail: "\(plan.target.origin) did not answer in time: a read timed out"))
        case .streaming:
            abortCaller()
        case .renewing, .done:
            break
        }
    }

    private func upstream(_ event: UpstreamEvent) {
        switch event {
        case .head, .body: lastRead = .now()
        case .end, .closed, .readComplete: break
        }
        switch (event, phase) {
        case (.head(let head), .waiting) where head.status.code < 200:
            informational = true
        case (.end, .waiting) where informational:
            informational = false
        case (.head(let head), .waiting):
            linkStaysOpen = head.isKeepAlive && !endsLink
            if head.status == .unauthorized, !refreshed, !callerLeft, api.engine != nil,
                VaultAPI.refusesToken(head.headers, method: plan.method)
            {
                phase = .refused
                refusal = (head, context.channel.allocator.buffer(capacity: 0))
            } else {
                answer(head)
            }
        case (.body(var part), .refused):
            refusal!.body.writeBuffer(&part)
            if refusal!.body.readableBytes > Self.maximumKeptRefusal { returnRefusal(ended: false) }
        case (.body(let part), .streaming):
            bodyBytes += part.readableBytes
            guard bodyBytes <= api.options.proxy.maximumResponseBytes else {
                // Cut off, as the router's path does: the caller sees the answer end early.
                return abortCaller()
            }
            writeBody(part)
        case (.end, .refused):
            releaseLink()
            guard !callerLeft else { return returnRefusal(ended: true) }
            renew()
        case (.end, .streaming):
            endAnswer()
            finish(keepingLink: linkStaysOpen)
        case (.readComplete, .streaming):
            context.flush()
            if !context.channel.isWritable { link?.handler.pause() }
        case (.closed, .waiting):
            let wasIdle = link?.reused ?? false
            link = nil
            // A kept connection the upstream closed as the request went out: once more on a new
            // one, when a second try cannot do the call twice.
            if wasIdle, !retried, VaultAPI.repeatableMethods.contains(plan.method) {
                retried = true
                return send(fresh: true)
            }
            fail(
                ProblemDetails(
                    .upstreamUnavailable,
                    detail: "\(plan.target.origin) could not be reached: the upstream closed the connection"))
        case (.closed, .refused):
            // Cut off: what came goes to the caller, whose connection then ends (its framing is
            // not complete).
            link = nil
            returnRefusal(ended: false)
            abortCaller()
        case (.closed, .streaming):
            link = nil
            abortCaller()
        default:
            break
        }
    }

    /// The upstream's answer goes to the caller: its head now, its body as it arrives. One that
    /// declares more than `proxy.max_response_bytes` is refused instead.
    private func answer(_ head: HTTPResponseHead) {
        let status = Int(head.status.code)
        let origin = plan.target.origin
        if let tooLarge = api.upstreamTooLarge(origin: origin, status: status, headers: head.headers) {
            linkStaysOpen = false
            return fail(tooLarge)
        }
        api.proxyAnswered(
            plan.peer, plan.id, method: plan.method.rawValue, origin: origin, provider: plan.provider, status: status,
            since: started)
        recordRoute(status: status)
        // Audited and counted; nobody is left to take the answer.
        guard !callerLeft else { return finish(keepingLink: false) }
        var fields = ProxyHeaders.returned(
            head.headers.map { ($0.name, $0.value) },
            tokens: carriedTokens, refreshed: refreshed)
        phase = .streaming
        writeHead(.init(code: status), &fields)
    }

    /// The answer's head, as bytes: framed by its `Content-Length`, or chunked without one
    /// (an answer that has no body, 1xx, 204 and 304, is neither). The upstream's own framing
    /// (`Transfer-Encoding`, `Connection`) never passes (`ProxyHeaders.notReturned`).
    private func writeHead(_ status: HTTPResponse.Status, _ fields: inout HTTPFields) {
        let bodyless = status.code < 200 || status.code == 204 || status.code == 304
        // RFC 9110 section 8.6: never a length on a 204 (a 304's names the representation's).
        if status.code == 204 { fields[.contentLength] = nil }
        chunked = !bodyless && fields[.contentLength] == nil
        // Neither is among the upstream's fields (`ProxyHeaders.notReturned`) or a problem's.
        if chunked { fields.append(HTTPField(name: .transferEncoding, value: "chunked")) }
        if plan.closesConnection { fields.append(HTTPField(name: .connection, value: "close")) }
        let head = FastResponse.head(
            status: status, fields: fields, requestID: requestID, serverName: VaultServer.serverName,
            allocator: context.channel.allocator)
        context.write(NIOAny(head), promise: nil)
    }

    /// A part of the answer's body, as it came or as a chunk.
    private func writeBody(_ part: ByteBuffer) {
        guard part.readableBytes > 0 else { return }
        guard chunked else { return context.write(NIOAny(part), promise: nil) }
        var size = context.channel.allocator.buffer(capacity: 18)
        size.writeString(String(part.readableBytes, radix: 16))
        size.writeStaticString("\r\n")
        context.write(NIOAny(size), promise: nil)
        context.write(NIOAny(part), promise: nil)
        context.write(NIOAny(Self.crlf), promise: nil)
    }

    private static let crlf = ByteBuffer(string: "\r\n")
    private static let lastChunk = ByteBuffer(string: "0\r\n\r\n")

    /// The kept 401 goes to the caller as it came (no new token came, or it was too long to keep).
    private func returnRefusal(ended: Bool) {
        guard let refusal else { return }
        self.refusal = nil
        answer(refusal.head)
        guard phase == .streaming else { return }
        bodyBytes = refusal.body.readableBytes
        writeBody(refusal.body)
        if ended {
            endAnswer()
            finish(keepingLink: false)
        } else {
            context.flush()
        }
    }

    /// One forced refresh through the engine (off the loop), then the call once more with the new
    /// token, or the kept 401.
    private func renew() {
        phase = .renewing
        let loop = NIOLoopBound(self, eventLoop: context.eventLoop)
        let (api, id, used) = (api, plan.id, plan.credential)
        Task {
            // A credential gone or a store that fails meanwhile: the 401 as it came.
            let renewed = (try? await api.renewedAfterRefusal(id, used: used)) ?? nil
            loop.eventLoop.execute { loop.value.renewed(renewed) }
        }
    }

    private func renewed(_ credential: Credential?) {
        guard phase == .renewing else { return }
        // Nobody to send the call again for: the 401 is its answer.
        guard let credential, !callerLeft else {
            phase = .refused
            return returnRefusal(ended: true)
        }
        carriedTokens.append(credential.secrets.accessToken)
        plan.credential = credential
        refreshed = true
        refusal = nil
        phase = .waiting
        send()
    }

    // MARK: Endings

    /// A problem instead of an answer: audited and counted as the router does.
    private func fail(_ problem: ProblemDetails) {
        guard phase != .done, phase != .streaming else { return abortCaller() }
        _ = api.proxyRefused(
            plan.peer, plan.id, method: plan.method.rawValue, origin: plan.target.origin, provider: plan.provider,
            problem)
        recordRoute(status: Int(problem.status.code))
        guard !callerLeft else { return finish(keepingLink: false) }
        if let (headers, body) = try? problem.document(requestID: requestID) {
            var fields = headers
            fields[.contentLength] = String(body.readableBytes)
            writeHead(problem.status, &fields)
            writeBody(body)
            endAnswer()
            finish(keepingLink: false)
        } else {
            abortCaller()
        }
    }

    /// The answer's end: the last chunk when chunked, and what was written goes out; then the
    /// connection's end when the caller asked for that (`Connection: close`).
    private func endAnswer() {
        if chunked { context.write(NIOAny(Self.lastChunk), promise: nil) }
        guard plan.closesConnection else { return context.flush() }
        connectionEnds = true
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(context.channel.allocator.buffer(capacity: 0)), promise: written)
        written.futureResult.whenComplete { [channel = context.channel] _ in channel.close(promise: nil) }
    }

    /// The answer cannot be completed: the caller's connection closes, which it sees as an answer
    /// cut short (a length not reached, a chunked body without its end).
    private func abortCaller() {
        connectionEnds = true
        context.close(promise: nil)
        finish(keepingLink: false)
    }

    private func deadlinePassed() {
        switch phase {
        case .waiting, .refused, .renewing:
            fail(
                ProblemDetails(
                    .upstreamTimeout,
                    detail: "\(plan.target.origin) did not answer in time: proxy.deadline_seconds passed"))
        case .streaming:
            abortCaller()
        case .done:
            break
        }
    }

    private func releaseLink() {
        guard let link else { return }
        self.link = nil
        if linkStaysOpen {
            pool.giveBack(link, key)
        } else {
            link.handler.receiver = nil
            link.channel.close(promise: nil)
        }
    }

    private func finish(keepingLink: Bool) {
        guard phase != .done else { return }
        phase = .done
        timer?.task.cancel()
        timer = nil
        linkStaysOpen = linkStaysOpen && keepingLink
        releaseLink()
        api.limiter.releaseProxyCall(uid: plan.peer.uid)
        ended(connectionEnds)
    }

    /// The series the router's `RequestMetricsMiddleware` records its answers in.
    private func recordRoute(status: Int) {
        api.metrics.record(route: plan.route, method: plan.method.rawValue, status: status, duration: .now - started)
    }

}

@available(*, unavailable)
extension ProxyFastCall: Sendable {}
