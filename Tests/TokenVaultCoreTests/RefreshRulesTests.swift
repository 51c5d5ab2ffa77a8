import Testing
import TokenVaultCore

/// Retry policy and lease decisions: the pure rules under the refresh engine.
@Suite struct RefreshRulesTests {
    @Test func fullJitterStaysUnderTheExponentialCeiling() {
        let policy = RetryPolicy(base: 1, cap: 300)
        #expect(policy.delay(attempt: 1, random: 1) == 1)
        #expect(policy.delay(attempt: 4, random: 1) == 8)
        #expect(policy.delay(attempt: 4, random: 0.25) == 2)
        #expect(policy.delay(attempt: 30, random: 1) == 300)
        #expect(policy.delay(attempt: 1000, random: 0.5) == 150)
    }

    @Test func retryAfterWinsAndIsClamped() {
        let policy = RetryPolicy(base: 1, cap: 300, maximumRetryAfter: 3600)
        #expect(policy.delay(attempt: 1, retryAfter: 120, random: 0) == 120)
        #expect(policy.delay(attempt: 1, retryAfter: 120, random: 1) == 132)
        #expect(policy.delay(attempt: 1, retryAfter: 86_400, random: 0) == 3600)
        #expect(policy.delay(attempt: 2, retryAfter: 0, random: 1) == 2)
    }

    static let now = Timestamp(milliseconds: 10_000)

    func attempt(owner: String, generation: Int64 = 1, leaseSeconds: Double = 60) -> RefreshAttempt {
        RefreshAttempt(
            attemptID: "a", credentialID: try! CredentialID("ns/x"), generation: generation,
            refreshTokenFingerprint: "f", leaseOwner: owner, leaseExpiresAt: Self.now.adding(seconds: leaseSeconds),
            startedAt: Self.now)
    }

    @Test func leaseDecisions() async {
        let never: (String) -> Bool = { _ in false }
        await #expect(LeaseDecision.decide(existing: nil, generation: 1, owner: "me", isOwnerGone: never) == .start)
        let foreign = attempt(owner: "other")
        await #expect(LeaseDecision.decide(existing: foreign, generation: 1, owner: "me", isOwnerGone: never) == .busy)
        await #expect(
            LeaseDecision.decide(existing: foreign, generation: 1, owner: "me", isOwnerGone: { $0 == "other" })
                == .resume(foreign))
        // A lease whose recorded end has passed is still held: leases are not judged by time.
        let expired = attempt(owner: "other", leaseSeconds: -1)
        await #expect(LeaseDecision.decide(existing: expired, generation: 1, owner: "me", isOwnerGone: never) == .busy)
        let mine = attempt(owner: "me")
        await #expect(
            LeaseDecision.decide(existing: mine, generation: 1, owner: "me", isOwnerGone: never) == .resume(mine))
        let older = attempt(owner: "me", generation: 1)
        await #expect(
            LeaseDecision.decide(existing: older, generation: 2, owner: "me", isOwnerGone: never) == .supersede(older))
    }
}
