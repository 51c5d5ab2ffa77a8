import Testing
import TokenVaultCore
import TokenVaultTesting

@Suite struct RefreshPlannerTests {
    let clock = FakeClock()
    let planner = RefreshPlanner()

    func offset(_ at: Timestamp?) -> Double? { at.map { $0.seconds - clock.now.seconds } }

    @Test func seventyFivePercentOfLifetimeWithoutJitter() {
        let at = planner.refreshAt(
            issuedAt: clock.now, expiresAt: clock.now.adding(seconds: 1800), refreshIn: nil, canRefresh: true, jitter: 0
        )
        #expect(offset(at) == 1350)
    }

    @Test func neverLaterThanMarginBeforeExpiry() {
        let at = planner.refreshAt(
            issuedAt: clock.now, expiresAt: clock.now.adding(seconds: 200), refreshIn: nil, canRefresh: true, jitter: 0)
        #expect(offset(at) == 140)
    }

    @Test func jitterTakesUpToTenPercentOfTheWindow() {
        let at = planner.refreshAt(
            issuedAt: clock.now, expiresAt: clock.now.adding(seconds: 1800), refreshIn: nil, canRefresh: true, jitter: 1
        )
        #expect(offset(at) == 1215)
    }

    @Test func serverRefreshInIsHonoured() {
        let at = planner.refreshAt(
            issuedAt: clock.now, expiresAt: clock.now.adding(seconds: 3600), refreshIn: 600, canRefresh: true, jitter: 0
        )
        #expect(offset(at) == 600)
    }

    @Test func unknownLifetimeUsesTheDefault() {
        let at = planner.refreshAt(issuedAt: clock.now, expiresAt: nil, refreshIn: nil, canRefresh: true, jitter: 0)
        #expect(offset(at) == 2700)
    }

    @Test func nothingToRefreshWithoutARefreshToken() {
        #expect(
            planner.refreshAt(
                issuedAt: clock.now, expiresAt: clock.now.adding(seconds: 60), refreshIn: nil, canRefresh: false,
                jitter: 0)
                == nil)
    }

    @Test func aLifetimeShorterThanTheMarginRefreshesAtHalfLifeNotInALoop() {
        let at = planner.refreshAt(
            issuedAt: clock.now, expiresAt: clock.now.adding(seconds: 30), refreshIn: nil, canRefresh: true, jitter: 0
        )
        #expect(offset(at) == 15)
    }

    @Test func aRefreshTokenExpiringFirstPullsTheRefreshForward() {
        let at = planner.refreshAt(
            issuedAt: clock.now, expiresAt: clock.now.adding(seconds: 3600), refreshIn: nil, canRefresh: true,
            jitter: 0,
            refreshTokenExpiresAt: clock.now.adding(seconds: 600))
        #expect(offset(at) == 540)
    }

    @Test func aZeroRefreshInIsIgnored() {
        let at = planner.refreshAt(
            issuedAt: clock.now, expiresAt: clock.now.adding(seconds: 1800), refreshIn: 0, canRefresh: true, jitter: 0)
        #expect(offset(at) == 1350)
    }

    @Test func perProviderSettingsApply() {
        let tinkoff = RefreshPlanner(lifetimeShare: 0.5, margin: 120, jitterFraction: 0, defaultLifetime: 1800)
        let at = tinkoff.refreshAt(issuedAt: clock.now, expiresAt: nil, refreshIn: nil, canRefresh: true, jitter: 0.9)
        #expect(offset(at) == 900)
    }
}
