import Foundation
import Synchronization
import TokenVaultCore
import TokenVaultProviders
import TokenVaultSystem

/// One running courier, from the daemon's side: the child process, the socketpair, and the calls
/// waiting for their answers. A thread reads the answers; when the courier ends (or the
/// connection breaks), every call still waiting fails as an unknown outcome (the request may
/// have been sent) and `ended` is called once.
final class CourierConnection: Sendable {
    let child: ChildProcess
    private let writer: FrameWriter
    private let state = Mutex(State())
    private let ended: @Sendable (CourierConnection) -> Void

    /// The courier's reply to an `instances` message.
    enum InstancesReply: Sendable, Equatable {
        /// Applied; the instances it could not make a transport for.
        case ready(unavailable: [ProviderConfigurationError])
        /// The courier ended first (its successor learns the set in its hello).
        case ended
        /// No reply within the timeout: the courier is stuck.
        case timedOut
    }

    private struct Update {
        var reply: CheckedContinuation<InstancesReply, Never>
        var timer: Task<Void, Never>?
    }

    private struct State {
        var nextID: UInt64 = 1
        var waiting: [UInt64: CheckedContinuation<CallResult, Never>] = [:]
        var updates: [UInt64: Update] = [:]
        var ready: CheckedContinuation<Bool, Never>?
        var isReady = false
        var isClosed = false
    }

    init(child: ChildProcess, ended: @escaping @Sendable (CourierConnection) -> Void) {
        self.child = child
        self.writer = FrameWriter(descriptor: child.descriptor)
        self.ended = ended
        let thread = Thread { [self] in readAnswers() }
        thread.name = "tokenvault-courier-link"
        thread.start()
    }

    /// Introduces the daemon and waits for `ready` (the courier holds the spool lock: a courier
    /// of an earlier daemon has finished). False when the courier ended or `timeout` passed.
    func handshake(_ hello: CourierMessage.Hello, timeout: Double) async -> Bool {
        do {
            try writer.send(.hello(hello))
        } catch {
            return false
        }
        let timer = Task { [self] in
            try await Task.sleep(for: .seconds(timeout))
            resolveReady(false)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let resolved = state.withLock { state -> Bool? in
                if state.isReady { return true }
                if state.isClosed { return false }
                state.ready = continuation
                return nil
            }
            if let resolved { continuation.resume(returning: resolved) }
        }
    }

    var calls: Int { state.withLock { $0.waiting.count } }

    /// Sends one call and waits for its result.
    func call(key: String?, context: SecretBytes?, route: UInt32, instance: String, request: PreparedRequest) async
        -> CallResult
    {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> UInt64? in
                guard !state.isClosed else { return nil }
                defer { state.nextID += 1 }
                state.waiting[state.nextID] = continuation
                return state.nextID
            }
            guard let id else { return continuation.resume(returning: .failure(ProviderFailure.courierUnavailable)) }
            do {
                try writer.send(
                    .call(
                        .init(
                            id: id, key: key, context: context, route: route, instance: instance, request: request)))
            } catch {
                // Not written: the courier never saw it.
                if let waiting = state.withLock({ $0.waiting.removeValue(forKey: id) }) {
                    waiting.resume(returning: .failure(ProviderFailure.courierUnavailable))
                }
            }
        }
    }

    func settle(_ key: String) { try? writer.send(.settle(key: key)) }

    /// Sends the instance set from now on (`version`, see `CourierMessage.instances`) and waits
    /// up to `timeout` seconds for the courier's reply: a stuck courier must not hold a reload.
    func replaceInstances(version: UInt64, _ instances: [CourierMessage.Instance], timeout: Double) async
        -> InstancesReply
    {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> UInt64? in
                guard !state.isClosed else { return nil }
                defer { state.nextID += 1 }
                state.updates[state.nextID] = Update(reply: continuation)
                return state.nextID
            }
            guard let id else { return continuation.resume(returning: .ended) }
            let timer = Task { [self] in
                try? await Task.sleep(for: .seconds(timeout))
                guard !Task.isCancelled else { return }
                resolveUpdate(id, .timedOut)
            }
            let waiting = state.withLock { state -> Bool in
                state.updates[id]?.timer = timer
                return state.updates[id] != nil
            }
            if !waiting { timer.cancel() }
            do {
                try writer.send(.instances(id: id, version: version, instances))
            } catch {
                resolveUpdate(id, .ended)
            }
        }
    }

    private func resolveUpdate(_ id: UInt64, _ reply: InstancesReply) {
        guard let update = state.withLock({ $0.updates.removeValue(forKey: id) }) else { return }
        update.timer?.cancel()
        update.reply.resume(returning: reply)
    }

    /// Shuts the daemon's end down: the courier finishes, spools what is unsettled, and exits.
    func close() { writer.shutDown() }

    private func readAnswers() {
        var reader = FrameReader(descriptor: child.descriptor)
        // However the link ends (the courier exited, or it sent a frame this side refuses), this
        // side's end is closed: the courier then sees end of file, spools what it holds for the
        // next courier and exits, instead of waiting on a link nobody reads any more. Nothing
        // reads or writes the descriptor after this.
        defer { writer.close() }
        while true {
            guard let message = try? reader.receive() else { break }
            switch message {
            case .ready:
                resolveReady(true)
            case .answer(let id, let result):
                state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(returning: result)
            case .instancesReady(let id, let unavailable):
                resolveUpdate(id, .ready(unavailable: unavailable))
            case .hello, .call, .settle, .instances:
                continue
            }
        }
        let (waiting, ready, updates) = state.withLock { state in
            state.isClosed = true
            defer {
                state.waiting = [:]
                state.updates = [:]
                state.ready = nil
            }
            return (Array(state.waiting.values), state.ready, Array(state.updates.values))
        }
        ready?.resume(returning: false)
        for update in updates {
            update.timer?.cancel()
            update.reply.resume(returning: .ended)
        }
        for continuation in waiting { continuation.resume(returning: .failure(ProviderFailure.courierLost)) }
        ended(self)
    }

    private func resolveReady(_ ready: Bool) {
        let waiting = state.withLock { state in
            if ready { state.isReady = true }
            defer { state.ready = nil }
            return state.ready
        }
        waiting?.resume(returning: ready)
    }
}
