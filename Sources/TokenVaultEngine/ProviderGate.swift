import Synchronization
import TokenVaultCore

/// Paces the calls to one provider instance: a circuit breaker (and the misconfiguration
/// pause), a concurrency limit and a token-bucket rate limit. Every refresh and revocation
/// passes through `admit`, then `acquire`/`release`.
final class ProviderGate: Sendable {
    let name: String
    let kind: String
    /// The limits in force (a reload may change them).
    var limits: ProviderLimits { state.withLock { $0.limits } }

    private struct State {
        var limits: ProviderLimits
        var inFlight = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var bucket: TokenBucket
        var breaker: CircuitBreaker
    }

    private let state: Mutex<State>
    private let started = ContinuousClock.now

    init(name: String, kind: String, limits: ProviderLimits) {
        self.name = name
        self.kind = kind
        state = Mutex(
            State(
                limits: limits,
                bucket: TokenBucket(rate: limits.ratePerSecond, capacity: limits.burst, now: 0),
                breaker: CircuitBreaker(
                    threshold: limits.breakerThreshold, cooldown: limits.breakerCooldown,
                    probeInterval: limits.misconfiguredProbeInterval,
                    misconfiguredCredentials: limits.misconfiguredCredentials)))
    }

    /// Nil when a call may go out; otherwise the time to come back (breaker open or probing).
    func admit(now: Timestamp) -> Timestamp? {
        state.withLock { $0.breaker.admit(now: now.seconds) }.map { Timestamp(seconds: $0) }
    }

    /// When a paused instance takes calls again; nil when it takes them now. Never makes the
    /// caller the probe (`CircuitBreaker.pausedUntil`).
    func pausedUntil(now: Timestamp) -> Timestamp? {
        state.withLock { $0.breaker.pausedUntil(now: now.seconds) }.map { Timestamp(seconds: $0) }
    }

    /// Calls waiting for a concurrency slot.
    var queued: Int { state.withLock { $0.waiters.count } }

    /// Waits for a concurrency slot, then for a rate token. Pair with `release()`.
    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let admitted = state.withLock { state -> Bool in
                guard state.inFlight < max(state.limits.concurrency, 1) else {
                    state.waiters.append(continuation)
                    return false
                }
                state.inFlight += 1
                return true
            }
            if admitted { continuation.resume() }
        }
        while true {
            let now = (ContinuousClock.now - started) / .seconds(1)
            let wait = state.withLock { $0.bucket.take(now: now) }
            if wait <= 0 { return }
            try? await Task.sleep(for: .seconds(wait))
        }
    }

    /// Puts new limits in force (a configuration reload): the breaker keeps its state and the
    /// bucket what it has banked; a higher concurrency lets waiting calls go at once.
    func update(_ limits: ProviderLimits) {
        let now = (ContinuousClock.now - started) / .seconds(1)
        let admitted = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.limits = limits
            state.bucket.retune(rate: limits.ratePerSecond, capacity: limits.burst, now: now)
            state.breaker.retune(
                threshold: limits.breakerThreshold, cooldown: limits.breakerCooldown,
                probeInterval: limits.misconfiguredProbeInterval,
                misconfiguredCredentials: limits.misconfiguredCredentials)
            var admitted: [CheckedContinuation<Void, Never>] = []
            while !state.waiters.isEmpty, state.inFlight < max(limits.concurrency, 1) {
                state.inFlight += 1
                admitted.append(state.waiters.removeFirst())
            }
            return admitted
        }
        for continuation in admitted { continuation.resume() }
    }

    /// Frees the slot, handing it straight to the next waiter if there is one and the limit
    /// allows.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            // Above a concurrency a reload lowered, a freed slot is not handed on.
            if state.waiters.isEmpty || state.inFlight > max(state.limits.concurrency, 1) {
                state.inFlight -= 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }

    func recordSuccess() { state.withLock { $0.breaker.recordSuccess() } }

    /// A failed call, for the breaker; `credential` names whose call it was (nil: not about one
    /// credential, a revocation or an exchange), so a misconfiguration of one credential alone
    /// does not pause the instance. `byGrant`: the call was a credential's own grant, whose
    /// refusals are that grant's, but for a refused client, which is every grant's
    /// (`FailurePolicy.providerClass`). Returns when the instance reopens if this failure paused
    /// it (a change the operator must hear of: every credential of the instance waits).
    @discardableResult
    func record(_ failure: ProviderFailure, credential: CredentialID?, byGrant: Bool = false, now: Timestamp)
        -> Timestamp?
    {
        let credential = byGrant && failure.refusesTheClient ? nil : credential
        return state.withLock { state in
            let wasOpen = if case .open = state.breaker.state { true } else { false }
            state.breaker.recordFailure(
                FailurePolicy.providerClass(failure, byGrant: byGrant), credential: credential, now: now.seconds)
            guard !wasOpen, case .open(let until, _) = state.breaker.state else { return nil }
            return Timestamp(seconds: until)
        }
    }

    var snapshot: ProviderState {
        state.withLock { state in
            let condition: ProviderState.Condition
            var detail: String?
            switch state.breaker.state {
            case .closed: condition = .ok
            case .open(let until, .failing):
                condition = .circuitOpen
                detail = "repeated transient failures; next probe at \(Timestamp(seconds: until))"
            case .halfOpen(.failing):
                condition = .circuitOpen
                detail = "probing after repeated transient failures"
            case .open(_, .misconfigured(let reason)), .halfOpen(.misconfigured(let reason)):
                condition = .misconfigured
                detail = reason
            }
            return ProviderState(
                name: name, kind: kind, condition: condition, detail: detail, inFlight: state.inFlight)
        }
    }
}
