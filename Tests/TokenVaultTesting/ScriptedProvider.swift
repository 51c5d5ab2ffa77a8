import Foundation
import Synchronization
import TokenVaultCore

/// An in-process `TokenProvider` for engine tests: answers come from a script (or rotate by
/// default), and every presented refresh token is counted so tests can assert that none was
/// presented twice. The loopback `TestOAuthServer` covers the wire; this covers decisions.
public final class ScriptedProvider: TokenProvider {
    public enum Step: Sendable {
        /// Mint a new pair (rotating the refresh token unless `rotate` is false).
        case succeed(lifetime: Double = 3600, rotate: Bool = true)
        case fail(ProviderFailure)
        /// Wait, then take the next step.
        case delay(Double)
        /// Wait until the test opens the latch, then take the next step.
        case hold(Latch)
        /// Answer as the courier does with an answer it kept through a restart: minted as by
        /// `succeed`, with the time its request was sent.
        case recovered(sentAt: Timestamp, lifetime: Double = 3600)
    }

    private struct State {
        var script: [Step] = []
        var presented: [String: Int] = [:]
        var revoked: [(String, TokenHint)] = []
        var revocationFailures: [ProviderFailure] = []
        var beforeRevoking: (@Sendable () async -> Void)?
        var calls = 0
        var minted = 0
        var exchangeCalls: [ProviderCall] = []
        var refreshCallKeys: [String?] = []
        var grants: [CredentialGrant] = []
        var exchangedSubjects: [String] = []
    }

    public let name: String
    public let supportsRevocation: Bool
    private let state = Mutex(State())
    /// Lifetime of minted access tokens when the script is empty.
    public let defaultLifetime: Double

    public init(name: String = "scripted", supportsRevocation: Bool = true, defaultLifetime: Double = 3600) {
        self.name = name
        self.supportsRevocation = supportsRevocation
        self.defaultLifetime = defaultLifetime
    }

    /// Steps for the next refresh calls, first in first out.
    public func script(_ steps: Step...) { state.withLock { $0.script += steps } }
    /// Runs once, as the next revocation call arrives (something another node does meanwhile).
    public func beforeNextRevocation(_ action: @escaping @Sendable () async -> Void) {
        state.withLock { $0.beforeRevoking = action }
    }
    /// Failures for the next revocation calls, first in first out.
    public func failRevocations(_ failures: ProviderFailure...) { state.withLock { $0.revocationFailures += failures } }

    public var calls: Int { state.withLock { $0.calls } }
    /// The key each refresh was made under (`RefreshRequest.call`), in order.
    public var refreshCallKeys: [String?] { state.withLock { $0.refreshCallKeys } }
    public var presentedTwice: [String] { state.withLock { $0.presented.filter { $0.value > 1 }.map(\.key) } }
    public var revocations: [(token: String, hint: TokenHint)] { state.withLock { $0.revoked.map { ($0.0, $0.1) } } }

    public func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload {
        let presented = request.refreshToken.revealString()
        state.withLock {
            $0.calls += 1
            $0.presented[presented, default: 0] += 1
            $0.refreshCallKeys.append(request.call?.key)
        }
        while true {
            let step = state.withLock { $0.script.isEmpty ? nil : $0.script.removeFirst() }
            switch step ?? .succeed(lifetime: defaultLifetime) {
            case .delay(let seconds):
                try? await Task.sleep(for: .seconds(seconds))
            case .hold(let latch):
                await latch.wait()
            case .fail(let failure):
                throw failure
            case .recovered(let sentAt, let lifetime):
                var payload = mint(lifetime: lifetime, rotate: true)
                payload.sentAt = sentAt
                return payload
            case .succeed(let lifetime, let rotate):
                return mint(lifetime: lifetime, rotate: rotate)
            }
        }
    }

    private func mint(lifetime: Double, rotate: Bool) -> TokenPayload {
        let serial = state.withLock { state -> Int in
            state.minted += 1
            return state.minted
        }
        return TokenPayload(
            kind: .oauth2,
            secrets: CredentialSecrets(
                accessToken: SecretBytes(utf8: "at-\(name)-\(serial)-\(UUID().uuidString)"),
                refreshToken: rotate ? SecretBytes(utf8: "rt-\(name)-\(serial)-\(UUID().uuidString)") : nil),
            tokenType: "Bearer", expiry: .after(seconds: lifetime))
    }

    public var clientID: String? { "scripted-client" }

    /// The keyed calls exchanges were made under (`CodeExchangeRequest.call`), as the courier saw them.
    public var exchangeCalls: [ProviderCall] { state.withLock { $0.exchangeCalls } }

    /// Exchanges take the next scripted step, like refreshes.
    public func exchange(_ request: CodeExchangeRequest) async throws(ProviderFailure) -> TokenPayload {
        if let call = request.call { state.withLock { $0.exchangeCalls.append(call) } }
        return try await refresh(
            RefreshRequest(credentialID: request.credentialID, refreshToken: SecretBytes(utf8: "code-exchange")))
    }

    /// The grants asked by `obtain`, in order.
    public var grants: [CredentialGrant] { state.withLock { $0.grants } }

    /// Grants take the next scripted step, like refreshes, and are counted among `refreshCallKeys`
    /// under their own call key. Their answers carry what no grant answer should keep: a refresh
    /// token (some servers send one), an id token and a subject.
    public func obtain(_ request: GrantRequest) async throws(ProviderFailure) -> TokenPayload {
        state.withLock { $0.grants.append(request.grant) }
        var payload = try await refresh(
            RefreshRequest(
                credentialID: request.credentialID, refreshToken: SecretBytes(utf8: "grant-\(UUID())"),
                call: request.call))
        payload.secrets.idToken = SecretBytes(utf8: "id-token-of-a-person")
        payload.subject = "person"
        return payload
    }

    /// The subject tokens token exchanges presented, in order.
    public var exchangedSubjects: [String] { state.withLock { $0.exchangedSubjects } }

    /// Token exchanges take the next scripted step, like refreshes, and answer no refresh token.
    public func exchangeToken(_ request: TokenExchangeRequest, subjectToken: SecretBytes, for credential: CredentialID)
        async throws(ProviderFailure) -> TokenPayload
    {
        state.withLock { $0.exchangedSubjects.append(subjectToken.revealString()) }
        var payload = try await refresh(
            RefreshRequest(credentialID: credential, refreshToken: SecretBytes(utf8: "exchange-\(UUID())")))
        payload.secrets.refreshToken = nil
        return payload
    }

    public func revoke(_ token: SecretBytes, hint: TokenHint, call: ProviderCall?) async throws(ProviderFailure) {
        if let action = state.withLock({ state in
            defer { state.beforeRevoking = nil }; return state.beforeRevoking
        }) {
            await action()
        }
        if let failure = state.withLock({ $0.revocationFailures.isEmpty ? nil : $0.revocationFailures.removeFirst() }) {
            throw failure
        }
        state.withLock { $0.revoked.append((token.revealString(), hint)) }
    }
}

extension ProviderFailure {
    public static let testInvalidGrant = ProviderFailure(
        kind: .invalidGrant, code: "invalid_grant", message: "refresh token revoked", httpStatus: 400)
    public static let testUnavailable = ProviderFailure(
        kind: .transient, code: "http_503", message: "service unavailable", retryAfter: nil, httpStatus: 503)
    public static let testTimeout = ProviderFailure(
        kind: .unknownOutcome, code: "timeout", message: "no answer within 10 s")
    public static let testInvalidClient = ProviderFailure(
        kind: .misconfigured, code: "invalid_client", message: "client authentication failed", httpStatus: 401)
}
