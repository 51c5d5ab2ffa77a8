import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultEngine

/// Token bucket, circuit breaker and failure policy: pure, with time passed in.
@Suite struct PacingTests {
    @Test func theBucketAllowsItsBurstThenPacesAtItsRate() {
        var bucket = TokenBucket(rate: 10, capacity: 5, now: 0)
        for _ in 0..<5 { #expect(bucket.take(now: 0) == 0) }
        let wait = bucket.take(now: 0)
        #expect(abs(wait - 0.1) < 1e-9)
        #expect(bucket.take(now: 0.1) == 0)
        // A long quiet spell banks no more than the capacity: the burst after an outage is bounded.
        var taken = 0
        while bucket.take(now: 1000) == 0 { taken += 1 }
        #expect(taken == 5)
    }

    @Test func theBreakerOpensAfterTheThresholdAndProbesOnce() {
        var breaker = CircuitBreaker(threshold: 3, cooldown: 30, probeInterval: 300)
        #expect(breaker.admit(now: 0) == nil)
        breaker.recordFailure(.transient, now: 0)
        breaker.recordFailure(.transient, now: 1)
        #expect(breaker.admit(now: 1) == nil)
        breaker.recordFailure(.transient, now: 2)
        #expect(breaker.admit(now: 3) == 32)
        #expect(breaker.admit(now: 32) == nil)  // the probe
        #expect(breaker.admit(now: 32) != nil)  // everyone else waits for it
        breaker.recordFailure(.transient, now: 33)
        #expect(breaker.admit(now: 34) == 93.0)  // reopened for twice as long (33 + 2 * 30)
        _ = breaker.admit(now: 100)
        breaker.recordSuccess()
        #expect(breaker.admit(now: 100) == nil)
    }

    @Test func retuningKeepsWhatIsBankedAndTheBreakersState() {
        var bucket = TokenBucket(rate: 10, capacity: 5, now: 0)
        for _ in 0..<4 { _ = bucket.take(now: 0) }
        bucket.retune(rate: 1, capacity: 2, now: 0)
        #expect(bucket.take(now: 0) == 0, "the one banked token carries over")
        #expect(abs(bucket.take(now: 0) - 1) < 1e-9, "then the new rate: one a second")

        var breaker = CircuitBreaker(threshold: 5, cooldown: 30, probeInterval: 300)
        breaker.recordFailure(.transient, now: 0)
        breaker.recordFailure(.transient, now: 0)
        breaker.retune(threshold: 3, cooldown: 10, probeInterval: 300, misconfiguredCredentials: 1)
        breaker.recordFailure(.transient, now: 1)
        #expect(breaker.admit(now: 2) == 11, "the failures counted before the reload count against the new threshold")
    }

    /// A reload that raises an instance's concurrency lets calls waiting for a slot go at once.
    @Test func raisingConcurrencyAdmitsWaitingCalls() async throws {
        let gate = ProviderGate(
            name: "acme", kind: "oauth2", limits: ProviderLimits(concurrency: 1, ratePerSecond: 1000, burst: 1000))
        await gate.acquire()
        let waiting = Task { await gate.acquire() }
        #expect(try await waitUntil(within: 5) { gate.queued == 1 })
        gate.update(ProviderLimits(concurrency: 2, ratePerSecond: 1000, burst: 1000))
        await waiting.value
        #expect(gate.limits.concurrency == 2)
        #expect(gate.snapshot.inFlight == 2)
    }

    /// A reload that lowers it holds waiting calls back until the calls in flight are below it.
    @Test func loweringConcurrencyTakesEffectWithABacklog() async throws {
        let gate = ProviderGate(
            name: "acme", kind: "oauth2", limits: ProviderLimits(concurrency: 2, ratePerSecond: 1000, burst: 1000))
        await gate.acquire()
        await gate.acquire()
        let waiting = Task { await gate.acquire() }
        #expect(try await waitUntil(within: 5) { gate.queued == 1 })
        gate.update(ProviderLimits(concurrency: 1, ratePerSecond: 1000, burst: 1000))
        // `release` decides at once whether the freed slot goes to the waiting call.
        gate.release()
        #expect(gate.snapshot.inFlight == 1 && gate.queued == 1, "the freed slot was above the new limit")
        gate.release()
        await waiting.value
        #expect(gate.snapshot.inFlight == 1)
    }

    /// The gate says when a failure pauses the instance (the engine logs it), once per pause.
    @Test func theGateReportsTheFailureThatPausesTheInstance() {
        let gate = ProviderGate(
            name: "acme", kind: "oauth2",
            limits: ProviderLimits(ratePerSecond: 1000, burst: 1000, breakerThreshold: 2, breakerCooldown: 30))
        let failure = ProviderFailure(kind: .transient, code: .timeout, message: "no answer")
        let id = try! CredentialID("ns/name")
        #expect(gate.record(failure, credential: id, now: Timestamp(seconds: 100)) == nil)
        #expect(gate.record(failure, credential: id, now: Timestamp(seconds: 101)) == Timestamp(seconds: 131))
        #expect(gate.admit(now: Timestamp(seconds: 131)) == nil)  // the probe
        #expect(gate.record(failure, credential: id, now: Timestamp(seconds: 132)) == Timestamp(seconds: 192))
        #expect(gate.record(failure, credential: id, now: Timestamp(seconds: 133)) == nil, "already paused")
    }

    @Test func invalidGrantDoesNotCountAgainstTheProvider() {
        var breaker = CircuitBreaker(threshold: 1, cooldown: 30, probeInterval: 300)
        breaker.recordFailure(.credential, now: 0)
        #expect(breaker.admit(now: 0) == nil)
    }

    @Test func misconfigurationPausesForTheProbeInterval() {
        var breaker = CircuitBreaker(threshold: 5, cooldown: 30, probeInterval: 300)
        breaker.recordFailure(.misconfigured("invalid_client"), now: 10)
        #expect(breaker.admit(now: 11) == 310)
        #expect(breaker.admit(now: 310) == nil)
    }

    static let metadata = CredentialMetadata(
        id: try! CredentialID("ns/name"), provider: "p", kind: .oauth2, generation: 3,
        issuedAt: Timestamp(milliseconds: 0), createdAt: Timestamp(milliseconds: 0),
        updatedAt: Timestamp(milliseconds: 0), hasRefreshToken: true, hasIDToken: false)
    static let now = Timestamp(milliseconds: 1_000_000)

    @Test func failurePolicyRows() {
        let policy = FailurePolicy(
            limits: ProviderLimits(misconfiguredProbeInterval: 300, retry: RetryPolicy(base: 2, cap: 60)))
        let dead = policy.decide(
            .testInvalidGrant, for: Self.metadata, resumingLostAnswer: false, now: Self.now, random: 0.5)
        #expect(dead.update.status == .needsReauth && dead.update.refreshAt == nil && dead.event == .needsReauth)
        #expect(dead.update.generation == 3)

        let misconfigured = policy.decide(
            .testInvalidClient, for: Self.metadata, resumingLostAnswer: false, now: Self.now, random: 0)
        #expect(misconfigured.update.status == .failing)
        #expect(misconfigured.update.refreshAt == Self.now.adding(seconds: 300))
        var neglected = Self.metadata
        neglected.refreshFailures = 3
        let slower = policy.decide(
            .testInvalidClient, for: neglected, resumingLostAnswer: false, now: Self.now, random: 0)
        #expect(slower.update.refreshAt == Self.now.adding(seconds: 2400))  // 300 s doubled thrice
        neglected.refreshFailures = 40
        let slowest = policy.decide(
            .testInvalidClient, for: neglected, resumingLostAnswer: false, now: Self.now, random: 0)
        #expect(slowest.update.refreshAt == Self.now.adding(seconds: 86_400))

        var failing = Self.metadata
        failing.refreshFailures = 3
        let transient = policy.decide(
            .testUnavailable, for: failing, resumingLostAnswer: false, now: Self.now, random: 1)
        #expect(transient.update.refreshFailures == 4)
        #expect(transient.update.refreshAt == Self.now.adding(seconds: 16))  // 2 * 2^3, full jitter at its top
        #expect(transient.event == .failing)

        // The same failure again is not a new event for watchers.
        failing.status = .failing
        failing.lastError = CredentialFailure(code: "http_503", message: "", at: Self.now)
        let again = policy.decide(.testUnavailable, for: failing, resumingLostAnswer: false, now: Self.now, random: 0.3)
        #expect(again.event == nil)

        let capped = policy.decide(
            .testTimeout,
            for: {
                var m = failing; m.refreshFailures = 50; return m
            }(), resumingLostAnswer: false,
            now: Self.now, random: 1)
        #expect(capped.update.refreshAt == Self.now.adding(seconds: 60))

        let lost = policy.decide(
            .testInvalidGrant, for: Self.metadata, resumingLostAnswer: true, now: Self.now, random: 0)
        #expect(lost.update.lastError?.message.contains("answer was lost") == true)
    }
}
