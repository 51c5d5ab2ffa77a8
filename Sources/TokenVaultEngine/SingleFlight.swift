import Synchronization
import TokenVaultCore

/// At most one operation per credential at any instant in this process. A refresh asked for
/// while one is in flight joins it (same outcome); a removal queues behind it. Across
/// processes, the journal's lease does the same job.
final class SingleFlight: Sendable {
    private struct Entry {
        let serial: Int
        let task: Task<RefreshOutcome, Never>
    }

    private struct State {
        var entries: [CredentialID: Entry] = [:]
        var serial = 0
        /// Told the outcome of the entry with that serial when it finishes (`join(_:_:whenDone:)`).
        var waiters: [Int: [@Sendable (RefreshOutcome) -> Void]] = [:]
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.entries.count } }

    /// The credentials with an operation in flight now.
    var ids: Set<CredentialID> { state.withLock { Set($0.entries.keys) } }

    func isRunning(_ id: CredentialID) -> Bool { state.withLock { $0.entries[id] != nil } }

    /// Joins the operation in flight for `id`, or starts `operation` as the new one.
    func join(_ id: CredentialID, _ operation: @escaping @Sendable () async -> RefreshOutcome) async -> RefreshOutcome {
        await task(for: id, queueBehind: false, operation).value
    }

    /// Joins like `join`, but hands the outcome to `whenDone` instead of waiting for it: for a
    /// caller that waits only so long (the operation runs on regardless), with no task of its own.
    func join(
        _ id: CredentialID, _ operation: @escaping @Sendable () async -> RefreshOutcome,
        whenDone: @escaping @Sendable (RefreshOutcome) -> Void
    ) {
        state.withLock { state in
            let serial: Int
            if let running = state.entries[id] {
                serial = running.serial
            } else {
                let entry = makeEntry(id, after: nil, &state, operation)
                state.entries[id] = entry
                serial = entry.serial
            }
            state.waiters[serial, default: []].append(whenDone)
        }
    }

    /// Starts `operation` after whatever is in flight for `id` has finished; later callers
    /// join it instead.
    func queue(_ id: CredentialID, _ operation: @escaping @Sendable () async -> RefreshOutcome) async -> RefreshOutcome
    {
        await task(for: id, queueBehind: true, operation).value
    }

    /// Starts `operation` unless something is already in flight for `id`; never waits.
    @discardableResult
    func startIfIdle(_ id: CredentialID, _ operation: @escaping @Sendable () async -> RefreshOutcome) -> Bool {
        state.withLock { state in
            guard state.entries[id] == nil else { return false }
            state.entries[id] = makeEntry(id, after: nil, &state, operation)
            return true
        }
    }

    private func task(
        for id: CredentialID, queueBehind: Bool, _ operation: @escaping @Sendable () async -> RefreshOutcome
    ) -> Task<RefreshOutcome, Never> {
        state.withLock { state in
            if let running = state.entries[id], !queueBehind { return running.task }
            let entry = makeEntry(id, after: state.entries[id]?.task, &state, operation)
            state.entries[id] = entry
            return entry.task
        }
    }

    /// Runs with the lock held, so the task cannot clear its entry before it is stored.
    private func makeEntry(
        _ id: CredentialID, after previous: Task<RefreshOutcome, Never>?, _ state: inout State,
        _ operation: @escaping @Sendable () async -> RefreshOutcome
    ) -> Entry {
        state.serial += 1
        let serial = state.serial
        let task = Task { [weak self] in
            _ = await previous?.value
            let outcome = await operation()
            self?.finish(id, serial: serial, outcome)
            return outcome
        }
        return Entry(serial: serial, task: task)
    }

    /// Clears the entry only if it is still this task's (a queued successor keeps its own), and
    /// tells its waiters.
    private func finish(_ id: CredentialID, serial: Int, _ outcome: RefreshOutcome) {
        let waiters = state.withLock { state in
            if state.entries[id]?.serial == serial { state.entries[id] = nil }
            return state.waiters.removeValue(forKey: serial) ?? []
        }
        for waiter in waiters { waiter(outcome) }
    }
}
