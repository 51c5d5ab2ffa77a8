import TokenVaultCore

/// Tokens a provider has issued exist only in its answer: once received, they are never
/// dropped. A write that carries them is tried at once; if the database refuses it (locked past
/// the busy timeout, full, a key term removed under it, unreachable), the write is held in memory
/// (the secrets are `SecretBytes`, in locked memory) and tried again with exponential backoff,
/// reloading the data keys before each try, for as long as the process lives. Meanwhile the
/// stored generation keeps being served while it is valid, the engine starts no other refresh of
/// the credential (it would present a spent refresh token), and `show`, health and metrics
/// report the held commit.
extension Vault {
    /// Commits `body` (a FULL write); on failure holds it and retries in the background, calling
    /// `committed` with its result once it goes through. The inline success is returned, not
    /// passed to `committed`.
    func commitHolding<Result: Sendable>(
        _ id: CredentialID, _ body: @escaping @Sendable (any CredentialWriter) async throws -> Result,
        committed: @escaping @Sendable (Result) -> Void
    ) async -> HeldOrCommitted<Result> {
        do {
            return .committed(try await writes.write(.full, claiming: [id], body))
        } catch {
            let hold = pending.newHold()
            let held = recordHeldFailure(id, hold: hold, error)
            Task.detached { [self] in await retryHeld(id, hold: hold, body, committed: committed) }
            return .held(held)
        }
    }

    private func retryHeld<Result: Sendable>(
        _ id: CredentialID, hold: Int, _ body: @escaping @Sendable (any CredentialWriter) async throws -> Result,
        committed: @escaping @Sendable (Result) -> Void
    ) async {
        var calls = pending.retryCalls
        while true {
            let retryAt = pending.hold(id, hold)?.nextAttemptAt ?? clock.now
            let wait = max(0, retryAt.seconds - clock.now.seconds)
            // Never cancelled: the answer is held for as long as the process lives. Slept in
            // short steps, so that `commitHeldNow` is heard within a tenth of a second.
            let until = ContinuousClock.now + .seconds(min(wait, options.commitRetryCap))
            while pending.retryCalls == calls {
                let left = until - ContinuousClock.now
                guard left > .zero else { break }
                try? await Task.sleep(for: min(left, .milliseconds(100)))
            }
            calls = pending.retryCalls
            try? await loadKeyTerms()
            do {
                let result = try await writes.write(.full, claiming: [id], body)
                let held = pending.hold(id, hold)
                pending.clear(id, hold: hold)
                committed(result)
                if let held { observer?.commitRecovered(id, after: held) }
                return
            } catch {
                recordHeldFailure(id, hold: hold, error)
            }
        }
    }

    /// Tries every held answer's commit now and waits, up to `seconds`, until each was tried once.
    /// A node whose leases lapsed (the database was unreachable) stores what it holds before it
    /// starts anything new. Returns how many answers are still held.
    @discardableResult
    public func commitHeldNow(waitingUpTo seconds: Double) async -> Int {
        let holds = pending.callRetriesNow()
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline,
            holds.contains(where: { pending.hold($0.id, $0.hold).map(\.failures) == $0.failures })
        {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return pending.count
    }

    /// Counts the failure and schedules the next try: 2^failures x the base, up to the cap.
    @discardableResult
    private func recordHeldFailure(_ id: CredentialID, hold: Int, _ error: any Error) -> PendingCommit {
        let failures = pending.hold(id, hold)?.failures ?? 0
        let delay = min(options.commitRetryBase * Double(1 << min(failures, 30)), options.commitRetryCap)
        let now = clock.now
        let held = pending.recordFailure(
            id, hold: hold, error: "\(error)", at: now, retryAt: now.adding(seconds: delay))
        observer?.commitFailed(id, pending: held, error: error)
        return held
    }
}
