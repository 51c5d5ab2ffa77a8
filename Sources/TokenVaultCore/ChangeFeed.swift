import Synchronization

/// In-process fan-out of credential events to the watch and event streams. Publishers never
/// wait: each subscriber has a bounded buffer, and a subscriber too slow to keep up loses the
/// oldest events rather than slowing a refresh down.
public final class ChangeFeed: Sendable {
    private struct Subscriber {
        let filter: CredentialID?
        let kinds: Set<CredentialEvent.Kind>?
        let continuation: AsyncStream<CredentialEvent>.Continuation

        func wants(_ kind: CredentialEvent.Kind, _ id: CredentialID) -> Bool {
            (filter == nil || filter == id) && (kinds?.contains(kind) ?? true)
        }
    }

    private let subscribers = Mutex<[Int: Subscriber]>([:])
    private let closed = Atomic<Bool>(false)
    private let nextID = Atomic<Int>(0)
    private let bufferSize: Int

    public init(bufferSize: Int = 1024) { self.bufferSize = bufferSize }

    /// Events from now on, for one credential or (with `nil`) for all of them, of the given kinds
    /// or (with `nil`) of every kind. The stream ends when the consumer stops iterating or the
    /// feed is closed.
    public func subscribe(to id: CredentialID? = nil, kinds: Set<CredentialEvent.Kind>? = nil)
        -> AsyncStream<CredentialEvent>
    {
        let key = nextID.add(1, ordering: .relaxed).newValue
        let (stream, continuation) = AsyncStream.makeStream(
            of: CredentialEvent.self, bufferingPolicy: .bufferingNewest(bufferSize))
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.removeValue(forKey: key) }
        }
        subscribers.withLock { $0[key] = Subscriber(filter: id, kinds: kinds, continuation: continuation) }
        if closed.load(ordering: .acquiring) { finishAll() }
        return stream
    }

    public func publish(_ event: CredentialEvent) {
        let targets = subscribers.withLock { all in
            all.values.filter { $0.wants(event.kind, event.id) }.map(\.continuation)
        }
        for continuation in targets { continuation.yield(event) }
    }

    public var subscriberCount: Int { subscribers.withLock { $0.count } }

    /// Whether an event of `kind` for `id` would reach anyone: a publisher that must read
    /// something to build the event can skip it when not.
    public func hasSubscriber(for kind: CredentialEvent.Kind, _ id: CredentialID) -> Bool {
        subscribers.withLock { all in all.values.contains { $0.wants(kind, id) } }
    }

    /// Ends every stream, and every stream subscribed from now on (daemon shutdown).
    public func close() {
        closed.store(true, ordering: .releasing)
        finishAll()
    }

    private func finishAll() {
        let all = subscribers.withLock { all in
            defer { all.removeAll() }
            return all.values.map(\.continuation)
        }
        for continuation in all { continuation.finish() }
    }
}
