import Synchronization
import TokenVaultCore

/// A provider with no HTTP at all, for the labelled "engine alone" comparison: it rotates
/// refresh tokens in memory (a spent or unknown token is refused with `invalid_grant`, and
/// counted), so the engine, the journal and the group commits are measured without the
/// loopback HTTP round trip and without the test server's CPU.
final class InMemoryProvider: RefreshOnlyProvider, TokenSource {
    let name = RefreshRig.providerName
    var tokenProvider: any TokenProvider { self }
    let lifetime: Double

    private struct State {
        var next = 0
        var live: Set<String> = []
        var spent: Set<String> = []
        var successful = 0
        var presentedTwice = 0
    }

    private let state = Mutex(State())

    init(lifetime: Int) {
        self.lifetime = Double(lifetime)
    }

    func issue(lifetime: Double) -> (accessToken: String, refreshToken: String) {
        state.withLock { state in
            state.next += 1
            let refreshToken = "rt-\(state.next)-0123456789abcdefghijklmnopqrstuvwxyz0123456789"
            state.live.insert(refreshToken)
            return ("at-\(state.next)-0123456789abcdefghijklmnopqrstuvwxyz0123456789", refreshToken)
        }
    }

    func refresh(_ request: RefreshRequest) async throws(ProviderFailure) -> TokenPayload {
        let presented = request.refreshToken.revealString()
        let accepted = state.withLock { state -> Bool in
            guard state.live.remove(presented) != nil else {
                if state.spent.contains(presented) { state.presentedTwice += 1 }
                return false
            }
            state.spent.insert(presented)
            state.successful += 1
            return true
        }
        guard accepted else {
            throw ProviderFailure(kind: .invalidGrant, code: .invalidGrant, message: "refresh token not live")
        }
        let (accessToken, refreshToken) = issue(lifetime: lifetime)
        return TokenPayload(
            kind: .oauth2,
            secrets: CredentialSecrets(
                accessToken: SecretBytes(utf8: accessToken), refreshToken: SecretBytes(utf8: refreshToken)),
            tokenType: "Bearer", expiry: .after(seconds: lifetime))
    }

    func isLive(_ refreshToken: String) -> Bool { state.withLock { $0.live.contains(refreshToken) } }
    var successfulRefreshes: Int { state.withLock { $0.successful } }
    var refreshTokensPresentedTwice: Int { state.withLock { $0.presentedTwice } }
    var revokedFamilies: Int { 0 }
    func shutdown() async {}
}
