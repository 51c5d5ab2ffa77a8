import HTTPTypes
import NIOCore
import TokenVaultCore

/// The proxied calls `TokenFastPath` makes (`ProxyFastCall`), and the bytes that wait behind one.
extension TokenFastPath {
    /// The call `request` asks for, if the event loop may make it: the proxy route, no answer
    /// owed before it, no `Expect` header, its body already received, and every rule saying yes
    /// (`ProxyFastCall.Plan.make`). Nil leaves the request to the rest (the router, for a
    /// proxied one).
    func proxyCall(_ context: ChannelHandlerContext, _ request: HTTPRequestFraming, in input: ByteBuffer)
        -> ProxyFastCall?
    {
        guard let pools,
            input.withUnsafeReadableBytes({
                FastTarget.proxyCall(UnsafeRawBufferPointer(rebasing: $0[request.target])) != nil
            })
        else { return nil }
        guard !request.hasExpect, tracker.answersOwed == 0,
            input.readableBytes >= request.headLength + request.bodyLength
        else {
            api.metrics.recordProxyFastPath(answered: false)
            return nil
        }
        let asked = input.withUnsafeReadableBytes { bytes -> (CredentialID, HTTPRequest.Method, String, HTTPFields)? in
            let target = UnsafeRawBufferPointer(rebasing: bytes[request.target])
            guard let id = FastTarget.proxyCredentialID(target),
                let method = HTTPRequest.Method(
                    String(decoding: UnsafeRawBufferPointer(rebasing: bytes[request.method]), as: UTF8.self))
            else { return nil }
            let head = UnsafeRawBufferPointer(rebasing: bytes[..<request.headLength])
            return (id, method, String(decoding: target, as: UTF8.self), HTTPRequestFraming.fields(in: head))
        }
        guard let (id, method, path, fields) = asked else {
            api.metrics.recordProxyFastPath(answered: false)
            return nil
        }
        // Counted as made or routed there.
        guard
            let plan = ProxyFastCall.Plan.make(
                api, caller: knownCaller, id: id, method: method, path: path, fields: fields,
                bodyLength: request.bodyLength)
        else { return nil }
        let body =
            request.bodyLength > 0
            ? input.getSlice(at: input.readerIndex + request.headLength, length: request.bodyLength) : nil
        let pool = self.pool ?? pools.pool(on: context.eventLoop)
        self.pool = pool
        let loop = NIOLoopBound(self, eventLoop: context.eventLoop)
        return ProxyFastCall(plan, body: body, api: api, context: context, pool: pool) {
            loop.value.callEnded(context, connectionEnds: $0)
        }
    }

    /// `call` is the connection's until it ends.
    func start(_ call: ProxyFastCall) {
        self.call = call
        tracker.noteCallStarted()
        call.start()
    }

    /// Bytes that arrived behind the call being made.
    func hold(_ input: inout ByteBuffer) {
        if held == nil {
            held = input
        } else {
            held!.writeBuffer(&input)
        }
    }

    /// The call is over: what waited behind it is taken, unless the caller's connection ends
    /// (closed, or the answer was cut short).
    private func callEnded(_ context: ChannelHandlerContext, connectionEnds: Bool) {
        call = nil
        tracker.noteCallEnded()
        guard context.channel.isActive, !connectionEnds else {
            closing = true
            held = nil
            heldEvents = []
            return
        }
        // Graceful shutdown ends the connection after the answer in flight, as Hummingbird does:
        // requests that waited behind it are not started.
        if heldEvents.contains(where: { $0 is ChannelShouldQuiesceEvent }) { held = nil }
        if let waiting = held {
            held = nil
            tracker.noteBytesArrived()
            if process(context, waiting) { context.fireChannelReadComplete() }
        }
        // Reading resumes unless another call started from what waited and bytes wait behind it.
        if readWithheld, held == nil {
            readWithheld = false
            context.read()
        }
        guard call == nil else { return }
        let events = heldEvents
        heldEvents = []
        for event in events { passOnOnceWritten(context, event) }
    }

    func read(context: ChannelHandlerContext) {
        // Once bytes wait behind the call, the connection is not read: more would only wait in
        // memory. (Withholding every read during a call would cost two `epoll_ctl` calls per call.)
        if call != nil, held != nil {
            readWithheld = true
        } else {
            context.read()
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        call?.callerGone()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        call?.callerWritable()
        context.fireChannelWritabilityChanged()
    }
}
