import Testing
import TokenVaultCore

/// The one rule for a credential's next generation: what a put (replacement) and a refresh each
/// keep, replace and plan.
@Suite struct NextGenerationTests {
    static let now = Timestamp(seconds: 1_800_000_000)
    static let id = try! CredentialID("ns/alice")
    static let planner = RefreshPlanner(lifetimeShare: 0.75, margin: 60, jitterFraction: 0, defaultLifetime: 3600)

    static func payload(
        access: String, refresh: String? = nil, idToken: String? = nil, lifetime: Double? = 3600,
        scopes: [String] = [], tokenType: String? = nil, subject: String? = nil
    ) -> TokenPayload {
        TokenPayload(
            kind: .oauth2,
            secrets: CredentialSecrets(
                accessToken: SecretBytes(utf8: access), refreshToken: refresh.map { SecretBytes(utf8: $0) },
                idToken: idToken.map { SecretBytes(utf8: $0) }),
            tokenType: tokenType, scopes: scopes, expiry: lifetime.map { .after(seconds: $0) } ?? .unknown,
            subject: subject)
    }

    static func first() -> NextGeneration {
        NextGeneration(
            previous: nil,
            payload: payload(
                access: "a1", refresh: "r1", idToken: "i1", scopes: ["openid"], tokenType: "Bearer", subject: "u-1"),
            succession: .replacement(provider: "acme", labels: ["env": "dev"]), id: id, issuedAt: now, now: now,
            planner: planner, jitter: 0)
    }

    @Test func aFirstPutStartsAtGenerationOne() {
        let first = Self.first()
        #expect(first.metadata.generation == 1)
        #expect(first.metadata.provider == "acme" && first.metadata.labels == ["env": "dev"])
        #expect(first.metadata.createdAt == Self.now && first.metadata.updatedAt == Self.now)
        #expect(first.metadata.expiresAt == Self.now.adding(seconds: 3600))
        #expect(first.metadata.refreshAt == Self.now.adding(seconds: 2700))
        #expect(first.metadata.hasRefreshToken && first.metadata.hasIDToken)
    }

    @Test func aReplacementTakesEverythingFromThePayload() {
        let first = Self.first()
        let later = Self.now.adding(seconds: 100)
        let next = NextGeneration(
            previous: first.metadata, previousSecrets: first.secrets, payload: Self.payload(access: "a2"),
            succession: .replacement(provider: "other", labels: [:]), id: Self.id, issuedAt: later, now: later,
            planner: Self.planner, jitter: 0)
        #expect(next.metadata.generation == 2)
        #expect(next.metadata.createdAt == Self.now, "creation is kept")
        #expect(next.metadata.provider == "other" && next.metadata.labels.isEmpty)
        #expect(next.secrets.refreshToken == nil && next.secrets.idToken == nil, "a put replaces every secret")
        #expect(!next.metadata.hasRefreshToken)
        #expect(next.metadata.scopes.isEmpty && next.metadata.subject == nil && next.metadata.tokenType == nil)
        // Cannot be refreshed: acted on at its expiry.
        #expect(next.metadata.refreshAt == next.metadata.expiresAt)
    }

    /// Tokens obtained by a grant have no refresh token and are still planned like a refresh (the
    /// grant renews them); a renewal keeps the grant, and a put of tokens over them drops it.
    @Test func aGrantIsPlannedLikeARefreshAndKeptByRenewals() {
        let grant = CredentialGrant(scopes: ["reports.read"])
        let obtained = NextGeneration(
            previous: nil, payload: Self.payload(access: "a1"),
            succession: .replacement(provider: "acme", labels: [:], grant: grant), id: Self.id, issuedAt: Self.now,
            now: Self.now, planner: Self.planner, jitter: 0)
        #expect(obtained.metadata.grant == grant && !obtained.metadata.hasRefreshToken && obtained.metadata.isRenewable)
        #expect(obtained.metadata.refreshAt == Self.now.adding(seconds: 2700))
        let later = Self.now.adding(seconds: 2700)
        let renewed = NextGeneration(
            previous: obtained.metadata, previousSecrets: obtained.secrets, payload: Self.payload(access: "a2"),
            succession: .refresh, id: Self.id, issuedAt: later, now: later, planner: Self.planner, jitter: 0)
        #expect(renewed.metadata.grant == grant && renewed.metadata.refreshAt == later.adding(seconds: 2700))
        let replaced = NextGeneration(
            previous: renewed.metadata, previousSecrets: renewed.secrets, payload: Self.payload(access: "a3"),
            succession: .replacement(provider: "acme", labels: [:]), id: Self.id, issuedAt: later, now: later,
            planner: Self.planner, jitter: 0)
        #expect(replaced.metadata.grant == nil && !replaced.metadata.isRenewable)
        #expect(replaced.metadata.refreshAt == replaced.metadata.expiresAt)
    }

    /// OpenID Connect Core section 12.2: a refreshed id token for another subject is not stored,
    /// and the new tokens are kept but not served (`needs_reauth`); a refused id token
    /// (`idTokenRejection`) shows as `last_error`.
    @Test func aRefreshedIDTokenForAnotherSubjectIsNotStored() {
        let first = Self.first()
        let later = Self.now.adding(seconds: 100)
        func refresh(_ payload: TokenPayload) -> NextGeneration {
            NextGeneration(
                previous: first.metadata, previousSecrets: first.secrets, payload: payload, succession: .refresh,
                id: Self.id, issuedAt: later, now: later, planner: Self.planner, jitter: 0)
        }
        let other = refresh(Self.payload(access: "a2", refresh: "r2", idToken: "i2", subject: "u-2"))
        #expect(other.metadata.subject == "u-1" && other.secrets.idToken?.revealString() == "i1")
        #expect(other.secrets.refreshToken?.revealString() == "r2" && other.secrets.accessToken.revealString() == "a2")
        #expect(other.metadata.lastError?.code == "id_token_invalid" && other.metadata.status == .needsReauth)
        #expect(other.metadata.refreshAt == nil, "not scheduled: it waits for a sign-in")
        let same = refresh(Self.payload(access: "a3", refresh: "r3", idToken: "i3", subject: "u-1"))
        #expect(same.secrets.idToken?.revealString() == "i3" && same.metadata.lastError == nil)
        var refused = Self.payload(access: "a4", refresh: "r4")
        refused.idTokenRejection = VaultError(
            code: .idTokenInvalid, message: "the id token's signature does not verify")
        let shown = refresh(refused)
        #expect(shown.metadata.lastError?.message == "the id token's signature does not verify")
        #expect(shown.secrets.refreshToken?.revealString() == "r4" && shown.secrets.idToken?.revealString() == "i1")
    }

    @Test func aRefreshKeepsWhatTheAnswerLeavesOut() {
        let first = Self.first()
        var failing = first.metadata
        failing.status = .failing
        failing.refreshFailures = 3
        failing.lastError = CredentialFailure(code: "timeout", message: "no answer", at: Self.now)
        let sent = Self.now.adding(seconds: 2700)
        let next = NextGeneration(
            previous: failing, previousSecrets: first.secrets, payload: Self.payload(access: "a2", lifetime: 600),
            succession: .refresh, id: Self.id, issuedAt: sent, now: sent.adding(seconds: 1), planner: Self.planner,
            jitter: 0)
        #expect(next.metadata.generation == 2)
        #expect(next.secrets.accessToken == SecretBytes(utf8: "a2"))
        #expect(
            next.secrets.refreshToken == SecretBytes(utf8: "r1"), "no refresh token in the answer: keep the old one")
        #expect(next.secrets.idToken == SecretBytes(utf8: "i1"))
        #expect(next.metadata.status == .active && next.metadata.refreshFailures == 0 && next.metadata.lastError == nil)
        #expect(
            next.metadata.scopes == ["openid"] && next.metadata.subject == "u-1" && next.metadata.tokenType == "Bearer")
        #expect(next.metadata.provider == "acme" && next.metadata.labels == ["env": "dev"])
        #expect(next.metadata.issuedAt == sent, "lifetimes count from when the request was sent")
        #expect(next.metadata.expiresAt == sent.adding(seconds: 600))
        #expect(next.metadata.refreshAt == sent.adding(seconds: 450))
        #expect(next.metadata.updatedAt == sent.adding(seconds: 1))
    }

    @Test func aRotatedRefreshTokenReplacesTheOldOneAndItsExpiry() {
        let first = Self.first()
        var payload = Self.payload(access: "a2", refresh: "r2")
        payload.refreshTokenExpiry = .after(seconds: 86_400)
        let next = NextGeneration(
            previous: first.metadata, previousSecrets: first.secrets, payload: payload, succession: .refresh,
            id: Self.id, issuedAt: Self.now, now: Self.now, planner: Self.planner, jitter: 0)
        #expect(next.secrets.refreshToken == SecretBytes(utf8: "r2"))
        #expect(next.metadata.refreshTokenExpiresAt == Self.now.adding(seconds: 86_400))
    }
}
