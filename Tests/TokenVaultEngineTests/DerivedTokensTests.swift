import Testing
import TokenVaultCore

@testable import TokenVaultEngine

/// The cache of tokens derived by RFC 8693: one per credential creation, generation and request
/// (lists in any order), handed out while it has a minute left, bounded.
@Suite struct DerivedTokensTests {
    static let now = Timestamp(seconds: 1_800_000_000)
    static let id = try! CredentialID("agents/alice")

    static func key(generation: Int64 = 1, createdAt: Timestamp = now, audiences: [String] = ["a", "b"])
        -> DerivedTokens.Key
    {
        DerivedTokens.Key(
            credential: id, createdAt: createdAt, generation: generation,
            request: TokenExchangeRequest(audiences: audiences, scopes: ["x", "y"]).canonical)
    }

    static func token(_ value: String, lifetime: Double) -> DerivedToken {
        DerivedToken(
            accessToken: SecretBytes(utf8: value), tokenType: "Bearer", issuedTokenType: nil,
            expiresAt: now.adding(seconds: lifetime), scopes: [])
    }

    @Test func aTokenIsHandedOutWhileItHasAMinuteLeft() {
        let cache = DerivedTokens()
        cache.keep(Self.token("t1", lifetime: 300), for: Self.key(), now: Self.now)
        #expect(cache.token(for: Self.key(audiences: ["b", "a"]), now: Self.now)?.accessToken.revealString() == "t1")
        #expect(cache.token(for: Self.key(), now: Self.now.adding(seconds: 240)) != nil)
        #expect(cache.token(for: Self.key(), now: Self.now.adding(seconds: 241)) == nil)
        // Gone once it had too little left.
        #expect(cache.token(for: Self.key(), now: Self.now) == nil)
    }

    @Test func anotherGenerationOrCreationDerivesAgain() {
        let cache = DerivedTokens()
        cache.keep(Self.token("t1", lifetime: 300), for: Self.key(), now: Self.now)
        #expect(cache.token(for: Self.key(generation: 2), now: Self.now) == nil)
        #expect(cache.token(for: Self.key(createdAt: Self.now.adding(seconds: 1)), now: Self.now) == nil)
        #expect(cache.token(for: Self.key(audiences: ["a"]), now: Self.now) == nil)
    }

    @Test func shortLivedOrUndatedTokensAreNotKept() {
        let cache = DerivedTokens()
        cache.keep(Self.token("t1", lifetime: 30), for: Self.key(), now: Self.now)
        #expect(cache.token(for: Self.key(), now: Self.now) == nil)
        var undated = Self.token("t2", lifetime: 300)
        undated.expiresAt = nil
        cache.keep(undated, for: Self.key(), now: Self.now)
        #expect(cache.token(for: Self.key(), now: Self.now) == nil)
    }
}
