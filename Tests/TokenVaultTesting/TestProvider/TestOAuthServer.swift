import Foundation
import NIOCore
import Synchronization

/// A real OAuth 2.0 authorization server on 127.0.0.1 for tests: HTTP/1.1 over SwiftNIO (no
/// framework in between, so a test controls the connection itself: answer late, answer garbage,
/// hang up), imitating the providers of docs/providers/. It keeps the true state of every
/// token it minted, so tests can assert what a real provider would have done to a client: "no
/// refresh token was presented twice", "no expired token was served".
///
/// Start one per test with `start`, and `shutdown` it at the end.
public final class TestOAuthServer: Sendable {
    public let port: Int
    /// `http://127.0.0.1:<port>`, or `https://…` with `Options.tls`.
    public let baseURL: String
    let core: ProviderCore
    private let listener: LoopbackListener

    private init(port: Int, baseURL: String, core: ProviderCore, listener: LoopbackListener) {
        self.port = port
        self.baseURL = baseURL
        self.core = core
        self.listener = listener
    }

    deinit { listener.closeNow() }

    public static func start(_ options: Options = Options()) async throws -> TestOAuthServer {
        let core = ProviderCore(options: options)
        let listener = LoopbackListener(core: core, tls: try options.tls?.makeContext())
        let port = try await listener.bind(port: 0)
        let baseURL = "\(options.tls == nil ? "http" : "https")://127.0.0.1:\(port)"
        core.state.withLock { $0.issuer = baseURL }
        return TestOAuthServer(port: port, baseURL: baseURL, core: core, listener: listener)
    }

    public var tokenURL: String { baseURL + options.tokenPath }
    public var revocationURL: String { baseURL + options.revocationPath }
    /// The options in force.
    public var options: Options { core.state.withLock { $0.options } }

    /// Changes the options; the next request sees the change.
    public func update(_ change: @Sendable (inout Options) -> Void) { core.state.withLock { change(&$0.options) } }

    /// TCP connections accepted since the start.
    public var acceptedConnections: Int { listener.acceptedConnections }

    /// Stops listening and closes every connection. Tokens are forgotten with the server.
    public func shutdown() async { await listener.close() }

    /// Outage: stop listening and close every open connection, keep-alive ones included (clients
    /// get connection refused). Tokens and counters survive.
    public func goOffline() async { await listener.close() }

    /// ... then listen again on the SAME port.
    public func comeBack() async throws {
        var attempt = 0
        while true {
            do {
                _ = try await listener.bind(port: port)
                return
            } catch {
                // The kernel may hold the port for a moment after the close; give up after ~2 s.
                attempt += 1
                guard attempt < 40 else { throw error }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    // MARK: Tokens

    /// A new token family, as a sign-in would create it. Tests store this in the vault.
    /// `lifetime` is the access token's, in seconds (default `accessTokenLifetime`).
    public func issue(scopes: [String] = [], lifetime: Double? = nil) -> IssuedTokens {
        core.state.withLock { state in
            state.ledger.newFamily(
                scopes: scopes, accessLifetime: lifetime ?? state.options.accessTokenLifetime,
                refreshLifetime: state.options.refreshTokenLifetime, now: state.now)
        }
    }

    /// Registers a one-time authorization code, as the authorization endpoint would after the
    /// user's consent. Its exchange must bring the same `redirect_uri` and, with a challenge, a
    /// `code_verifier` that passes S256; it creates a new family whose id_token carries `nonce`.
    /// A failed exchange leaves the code usable; a second successful one is a replay
    /// (`invalid_grant`, and with `reuseDetection` the first exchange's family is revoked).
    public func registerCode(
        _ code: String, codeChallenge: String?, redirectURI: String, nonce: String? = nil, scopes: [String] = []
    ) {
        core.state.withLock {
            $0.ledger.registerCode(
                code,
                TokenLedger.AuthorizationCode(
                    codeChallenge: codeChallenge, redirectURI: redirectURI, nonce: nonce, scopes: scopes))
        }
    }

    /// One-shot behaviours for the next requests to the token endpoint, consumed first-in first-out; when the queue is empty, requests are served normally.
    public func script(_ steps: ScriptedResponse...) { core.state.withLock { $0.tokenScript += steps } }

    /// The same for the revocation endpoint (e.g. 503 + Retry-After: "not revoked, try again").
    public func scriptRevocation(_ steps: ScriptedResponse...) {
        core.state.withLock { $0.revocationScript += steps }
    }

    /// Steps not yet used, token endpoint then revocation endpoint (a test can check all were used).
    public var pendingScriptSteps: Int { core.state.withLock { $0.tokenScript.count + $0.revocationScript.count } }

    // MARK: Counters and assertions

    /// Requests to the token endpoint, scripted ones included.
    public var tokenRequestCount: Int { core.state.withLock { $0.counters.tokenRequests } }
    public var revocationRequestCount: Int { core.state.withLock { $0.counters.revocationRequests } }
    /// Every request to any path, in order.
    public var requests: [RecordedRequest] { core.state.withLock { $0.counters.requests } }
    /// Refresh token -> times presented to the token endpoint (any request carrying it, scripted or not).
    public var presentations: [String: Int] { core.state.withLock { $0.counters.presentations } }
    /// Tokens with presentations >= 2, sorted.
    public var refreshTokensPresentedTwice: [String] {
        core.state.withLock { $0.counters.presentations.filter { $0.value >= 2 }.map(\.key).sorted() }
    }
    /// Families killed by reuse detection (a spent refresh token, or a replayed code).
    public var revokedFamilies: Int { core.state.withLock { $0.counters.revokedFamilies } }
    /// Refresh grants that minted a new access token, including those whose answer was then
    /// dropped or garbled by a script (`rotateThenDrop`, `malformedJSON(rotating: true)`).
    public var successfulRefreshes: Int { core.state.withLock { $0.counters.successfulRefreshes } }
    /// Authorization codes exchanged for a new family.
    public var successfulCodeExchanges: Int { core.state.withLock { $0.counters.successfulCodeExchanges } }

    /// By the server's clock (`Date()` plus `clockOffset`).
    public func accessTokenState(_ token: String) -> TokenState {
        core.state.withLock { $0.ledger.accessState(token, now: $0.now) }
    }

    /// What the server thought of `token` at `date` (by its clock, `clockOffset` included): a
    /// client judged for a token it was handed at `date`, whatever has happened since.
    public func accessTokenState(_ token: String, at date: Date) -> TokenState {
        core.state.withLock { $0.ledger.accessState(token, now: date.addingTimeInterval($0.options.clockOffset)) }
    }

    /// A spent (rotated) token reads `.valid` within the grace window and `.revoked` after it.
    public func refreshTokenState(_ token: String) -> TokenState {
        core.state.withLock { $0.ledger.refreshState(token, graceWindow: $0.options.graceWindow, now: $0.now) }
    }

    /// Whether the refresh token was rotated away (whatever happened to its family since).
    public func isSpent(_ refreshToken: String) -> Bool { core.state.withLock { $0.ledger.isSpent(refreshToken) } }

    /// The family a token belongs to, nil for a token this server never minted.
    public func familyID(of token: String) -> String? { core.state.withLock { $0.ledger.familyID(of: token) } }

    /// Whether the family was revoked, by reuse detection or by revoking one of its refresh tokens.
    public func isFamilyRevoked(_ familyID: String) -> Bool {
        core.state.withLock { $0.ledger.families[familyID]?.revoked ?? false }
    }

    /// Zeroes the counters and forgets the recorded requests; tokens, options and scripts stay.
    /// The thumbprint of the DPoP key `token` is bound to; nil when it is a bearer token.
    public func boundKey(of token: String) -> String? { core.state.withLock { $0.dpopBindings[token] } }

    public func resetCounters() { core.state.withLock { $0.counters = ProviderState.Counters() } }
}
