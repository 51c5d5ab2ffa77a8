import Foundation
import NIOCore
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultServer

/// The pure pieces of the token read that the router and the event-loop fast path share: which
/// targets the fast path takes, what a credential's state answers, and the response body.
@Suite struct TokenFastPathUnitTests {
    // MARK: Targets

    @Test func recognisesOnlyThePlainTokenTarget() throws {
        let plain = try #require(TokenReadTarget("/v1/credentials/pay/alice/token"))
        #expect(plain.id.description == "pay/alice" && plain.minimumTTL == 0)
        #expect(TokenReadTarget("/v1/credentials/pay/alice/token?min_ttl=60")?.minimumTTL == 60)
        #expect(TokenReadTarget("/v1/credentials/pay/alice/token?min_ttl=1.5")?.minimumTTL == 1.5)
        #expect(TokenReadTarget("/v1/credentials/pay/alice/token?min_ttl=86400")?.minimumTTL == 86_400)
    }

    /// Each of these goes to the router, which answers it precisely (400, 404, 405...).
    @Test(arguments: [
        "/v1/credentials/pay/alice", "/v1/credentials/pay/alice/token/", "/v1/credentials/pay/token",
        "/v1/credentials/pay/alice/extra/token", "/v1/credentials//alice/token", "/v1/credentials/pay/a%20b/token",
        "/v1/credentials/pay/alice/token?", "/v1/credentials/pay/alice/token?min_ttl=",
        "/v1/credentials/pay/alice/token?min_ttl=-1", "/v1/credentials/pay/alice/token?min_ttl=86401",
        "/v1/credentials/pay/alice/token?min_ttl=nan", "/v1/credentials/pay/alice/token?min_ttl=60&x=1",
        "/v1/credentials/pay/alice/token?x=1", "/v1/credentials/pay/alice/token?min_ttl=6%30",
        "/v2/credentials/pay/alice/token", "/v1/credentials/pay/al ice/token",
        "/v1/credentials/pay/alice/token?min_ttl=+5", "/v1/credentials/pay/alice/token?min_ttl=1e3",
        "/v1/credentials/pay/alice/token?min_ttl=0x10", "/v1/credentials/pay/alice/token?min_ttl=.",
    ])
    func leavesEverythingElseToTheRouter(target: String) {
        #expect(TokenReadTarget(target) == nil)
    }

    // MARK: Verdicts

    static let now = Timestamp(milliseconds: 1_795_000_000_000)

    static func metadata(
        status: CredentialStatus = .active, expiresIn: Double? = 600, refreshable: Bool = true,
        lastError: CredentialFailure? = nil
    ) throws -> CredentialMetadata {
        CredentialMetadata(
            id: try CredentialID("pay/alice"), provider: "oauth2", kind: .oauth2, status: status, generation: 3,
            issuedAt: now, expiresAt: expiresIn.map { now.adding(seconds: $0) }, lastError: lastError, createdAt: now,
            updatedAt: now, hasRefreshToken: refreshable, hasIDToken: false)
    }

    /// Which other GETs the loop takes: health, a credential's metadata, and a path no route's
    /// template matches; never one a route might take (`**` included) or an unusual one.
    @Test func recognisesHealthMetadataAndPathsNoRouteHas() throws {
        let routes = RouteTable([
            ("GET", "/v1/health"), ("GET", "/v1/credentials/{namespace}/{name}"),
            ("POST", "/v1/admin/rotate-key"), ("GET", "/v1/credentials/{namespace}/{name}/proxy/**"),
        ])
        #expect(Self.target("/v1/health", routes) == .health)
        #expect(Self.target("/v1/credentials/pay/alice", routes) == .show(try CredentialID("pay/alice")))
        #expect(Self.target("/v1/nothing/here", routes) == .unmatched(path: "/v1/nothing/here"))
        // Neither is a proxied call, whose route always exists.
        #expect(
            Self.target("/v1/credentials/pay/alice/proxyx", routes)
                == .unmatched(path: "/v1/credentials/pay/alice/proxyx"))
        #expect(
            Self.target("/v1/credentials/pay/alice/x/proxy", routes)
                == .unmatched(path: "/v1/credentials/pay/alice/x/proxy"))
        for routed in [
            "/v1/admin/rotate-key", "/v1/credentials/pay/alice/proxy/x", "/v1/credentials/pay/alice/proxy/x/y",
            "/v1/credentials/pay/alice/proxy",
            "/v1/health?verbose=1", "/v1/%68ealth", "/v1//health", "/v1/./health", "/v1/../x", "v1/health",
            "/v1/credentials/pay/al%20ice",
        ] {
            #expect(Self.target(routed, routes) == nil, "\(routed)")
        }
    }

    static func target(_ text: String, _ routes: RouteTable) -> FastTarget? {
        var text = text
        return text.withUTF8 { FastTarget(bytes: UnsafeRawBufferPointer($0), routes: routes) }
    }

    @Test func servesATokenThatLastsLongEnough() throws {
        #expect(TokenReadVerdict(try Self.metadata(), minimumTTL: 60, now: Self.now, canRefresh: true) == .serve)
        #expect(
            TokenReadVerdict(try Self.metadata(expiresIn: nil), minimumTTL: 60, now: Self.now, canRefresh: true)
                == .serve)
        let failing = try Self.metadata(status: .failing)
        #expect(TokenReadVerdict(failing, minimumTTL: 599, now: Self.now, canRefresh: true) == .serve)
    }

    @Test func refreshesFirstWhenTooShortAndRefreshable() throws {
        #expect(
            TokenReadVerdict(try Self.metadata(), minimumTTL: 601, now: Self.now, canRefresh: true) == .refreshFirst)
        let failing = try Self.metadata(status: .failing, expiresIn: -5)
        #expect(TokenReadVerdict(failing, minimumTTL: 0, now: Self.now, canRefresh: true) == .refreshFirst)
    }

    /// A node's clock: within its bound, expiry is judged on the corrected time (a token the
    /// database's clock has expired is not served by a host 4 s behind); beyond it nothing is.
    @Test func expiryIsJudgedOnTheDatabasesClockAndNothingIsServedBeyondTheBound() throws {
        let host = FakeClock(Self.now)
        let clock = CorrectedClock(base: host, maximumOffset: 10)
        // Expired 2 s ago by the database's clock, 2 s left by the host's.
        let expired = try Self.metadata(expiresIn: 2)
        guard case .refuse(.clockSkew, _) = TokenReadVerdict(expired, minimumTTL: 0, clock: clock, canRefresh: false)
        else { Issue.record("served before the clock was measured"); return }
        clock.record(databaseNow: Self.now, sentAt: Self.now, receivedAt: Self.now)
        #expect(TokenReadVerdict(expired, minimumTTL: 0, clock: clock, canRefresh: false) == .serve)
        clock.record(databaseNow: Self.now.adding(seconds: 4), sentAt: Self.now, receivedAt: Self.now)
        guard case .refuse(let code, _) = TokenReadVerdict(expired, minimumTTL: 0, clock: clock, canRefresh: false)
        else { Issue.record("served a token the database's clock has expired"); return }
        #expect(code == .tokenExpired)
        clock.record(databaseNow: Self.now.adding(seconds: 600), sentAt: Self.now, receivedAt: Self.now)
        let fresh = try Self.metadata()
        guard
            case .refuse(let skew, let detail) = TokenReadVerdict(fresh, minimumTTL: 0, clock: clock, canRefresh: true)
        else { Issue.record("served with a clock 600 s off"); return }
        #expect(skew == .clockSkew && detail.contains("600.0 s behind"), "\(detail)")
    }

    @Test func refusesWhatCannotBeServed() throws {
        let short = TokenReadVerdict(try Self.metadata(), minimumTTL: 601, now: Self.now, canRefresh: false)
        #expect(
            short
                == .refuse(
                    code: .tokenExpired,
                    detail:
                        "the access token of pay/alice expires at \(Self.now.adding(seconds: 600)), sooner than min_ttl=601 s"
                ))
        let expired = TokenReadVerdict(
            try Self.metadata(expiresIn: -1, refreshable: false), minimumTTL: 0, now: Self.now, canRefresh: true)
        guard case .refuse(.tokenExpired, let detail) = expired else {
            Issue.record("expected token_expired, got \(expired)")
            return
        }
        #expect(detail.contains("expired at"))

        let failure = CredentialFailure(code: "invalid_grant", message: "refresh token reused", at: Self.now)
        let reauth = TokenReadVerdict(
            try Self.metadata(status: .needsReauth, lastError: failure), minimumTTL: 0, now: Self.now, canRefresh: true)
        #expect(
            reauth
                == .refuse(
                    code: .needsReauth, detail: "credential pay/alice needs re-authorisation: refresh token reused"))
        let deleting = TokenReadVerdict(
            try Self.metadata(status: .revokePending), minimumTTL: 0, now: Self.now, canRefresh: true)
        guard case .refuse(.revokePending, _) = deleting else {
            Issue.record("expected revoke_pending, got \(deleting)")
            return
        }
    }

    @Test func namesWhyTheRefreshDidNotHelp() throws {
        let failure = CredentialFailure(code: "connection_failed", message: "refused", at: Self.now)
        let stale = try Self.metadata(status: .failing, expiresIn: 10, lastError: failure)
        let withoutAttempt = TokenReadVerdict(stale, minimumTTL: 60, now: Self.now, canRefresh: false)
        let afterAttempt = TokenReadVerdict(
            stale, minimumTTL: 60, now: Self.now, canRefresh: false, refreshFailure: "the refresh failed: x: y")
        guard case .refuse(_, let plain) = withoutAttempt, case .refuse(_, let explained) = afterAttempt else {
            Issue.record("expected refusals")
            return
        }
        #expect(plain.hasSuffix("; last refresh error: connection_failed: refused"))
        #expect(explained.hasSuffix("; the refresh failed: x: y"))
    }

    // MARK: Body

    struct Document: Decodable, Equatable {
        let access_token: String
        let token_type: String
        let expires_at: String?
        let id_token: String?
    }

    static func body(_ access: String, type: String = "Bearer", expiresAt: Timestamp? = now, id: String? = nil)
        -> String
    {
        let buffer = TokenJSON.body(
            accessToken: SecretBytes(Array(access.utf8)), tokenType: type, expiresAt: expiresAt,
            idToken: id.map { SecretBytes(Array($0.utf8)) }, allocator: ByteBufferAllocator())
        return String(buffer: buffer)
    }

    @Test func writesWhatJSONEncoderWritesForOrdinaryTokens() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for (access, id, expiresAt) in [
            ("t.abc-DEF_123/+=", "eyJ.eyJ.sig" as String?, Self.now as Timestamp?), ("at", nil, nil),
            ("at", nil, Self.now),
        ] {
            let expected = try encoder.encode(
                TokenDocument(accessToken: access, tokenType: "Bearer", expiresAt: expiresAt?.description, idToken: id))
            #expect(Self.body(access, expiresAt: expiresAt, id: id) == String(decoding: expected, as: UTF8.self))
        }
    }

    @Test func escapesWhatJSONRequires() throws {
        let awkward = "quote\" backslash\\ newline\n tab\t nul\u{0} bell\u{7} unicode ключ 🔑 end"
        let text = Self.body(awkward, type: "Bear\"er", id: "\u{1f}")
        let decoded = try JSONDecoder().decode(Document.self, from: Data(text.utf8))
        #expect(
            decoded
                == Document(
                    access_token: awkward, token_type: "Bear\"er", expires_at: Self.now.description, id_token: "\u{1f}")
        )
        #expect(text.contains(#"\u0000"#) && text.contains(#"\u0007"#) && text.contains(#"\u001f"#))
        #expect(Self.body("") == #"{"access_token":"","expires_at":"\#(Self.now)","token_type":"Bearer"}"#)
    }

    @Test func formatsTheDateHeader() {
        #expect(HTTPDateHeader.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDateHeader.format(1_795_000_000) == "Wed, 18 Nov 2026 11:06:40 GMT")
        #expect(HTTPDateHeader.now.hasSuffix(" GMT") && HTTPDateHeader.now.count == 29)
    }
}
