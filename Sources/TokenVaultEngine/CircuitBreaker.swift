import TokenVaultCore

/// Stops calling a provider that keeps failing, then lets one probe through. Pure: time is an
/// argument (seconds on any monotonic scale).
///
/// closed --(threshold consecutive transient failures)--> open --(cooldown)--> half-open:
/// one probe; success closes, failure opens again with the cooldown doubled (up to 4x, so a
/// provider that comes back is probed within four cooldowns).
/// A misconfiguration (`invalid_client`, ...) opens it for the slow probe interval instead, once
/// `misconfiguredCredentials` different credentials have met one within that interval: a single
/// credential's `invalid_scope` (or a caller's crafted token) must not pause everyone's refreshes.
/// That credential backs off on its own (`FailurePolicy`).
struct CircuitBreaker: Sendable, Equatable {
    enum State: Sendable, Equatable {
        case closed(failures: Int)
        case open(until: Double, reason: Reason)
        case halfOpen(reason: Reason)
    }

    enum Reason: Sendable, Equatable {
        case failing
        case misconfigured(String)
    }

    private(set) var threshold: Int
    private(set) var cooldown: Double
    private(set) var probeInterval: Double
    private(set) var misconfiguredCredentials: Int
    private(set) var state: State = .closed(failures: 0)
    private var openings = 0
    /// Credentials refused as misconfigured recently, and when (at most `misconfiguredCredentials`).
    private var misconfigured: [CredentialID: Double] = [:]

    init(threshold: Int, cooldown: Double, probeInterval: Double, misconfiguredCredentials: Int = 1) {
        self.threshold = max(threshold, 1)
        self.cooldown = cooldown
        self.probeInterval = probeInterval
        self.misconfiguredCredentials = max(misconfiguredCredentials, 1)
    }

    /// New limits from a reload; the breaker's state (open, failures counted) carries over.
    mutating func retune(threshold: Int, cooldown: Double, probeInterval: Double, misconfiguredCredentials: Int) {
        self.threshold = max(threshold, 1)
        self.cooldown = cooldown
        self.probeInterval = probeInterval
        self.misconfiguredCredentials = max(misconfiguredCredentials, 1)
    }

    /// While the instance is paused (open, or a probe out), when to come back; nil when closed.
    /// Unlike `admit`, never makes the caller the probe: for calls whose failures may say nothing
    /// of the instance (a put's grant), which must not leave a probe unanswered.
    func pausedUntil(now: Double) -> Double? {
        switch state {
        case .closed: nil
        case .open(let until, _): max(until, now + 1)
        case .halfOpen: now + min(cooldown, 5)
        }
    }

    /// Whether a call may go out now; if not, when to come back.
    mutating func admit(now: Double) -> Double? {
        switch state {
        case .closed: return nil
        case .open(let until, let reason):
            guard now >= until else { return until }
            state = .halfOpen(reason: reason)
            return nil
        case .halfOpen:
            // One probe is already out; everyone else waits a little.
            return now + min(cooldown, 5)
        }
    }

    mutating func recordSuccess() {
        state = .closed(failures: 0)
        openings = 0
    }

    mutating func recordFailure(_ kind: ProviderFailureClass, credential: CredentialID? = nil, now: Double) {
        switch kind {
        case .misconfigured(let detail):
            if case .halfOpen(.misconfigured) = state {
                // The probe of a paused instance failed the same way: stay paused.
                state = .open(until: now + probeInterval, reason: .misconfigured(detail))
                return
            }
            if let credential {
                misconfigured = misconfigured.filter { now - $0.value < probeInterval }
                misconfigured[credential] = now
                guard misconfigured.count >= misconfiguredCredentials else { return }
                misconfigured.removeAll()
            }
            state = .open(until: now + probeInterval, reason: .misconfigured(detail))
        case .transient:
            switch state {
            case .closed(let failures):
                if failures + 1 >= threshold { open(now: now) } else { state = .closed(failures: failures + 1) }
            case .halfOpen, .open:
                open(now: now)
            }
        case .credential:
            // invalid_grant says nothing about the provider's health; a half-open probe that got
            // an answer proves the provider is up.
            if case .halfOpen = state { recordSuccess() }
        case .local:
            break
        }
    }

    private mutating func open(now: Double) {
        openings = min(openings + 1, 3)
        let factor = Double(1 << (openings - 1))
        state = .open(until: now + cooldown * factor, reason: .failing)
    }
}

/// How a failure bears on the provider (as opposed to the credential).
enum ProviderFailureClass: Sendable, Equatable {
    case transient
    case misconfigured(String)
    /// About one credential only (`invalid_grant`, a grant's own refusal).
    case credential
    /// Nothing about the provider: our own courier failed, or a grant was refused before it was
    /// sent.
    case local
}
