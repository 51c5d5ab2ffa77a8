import TokenVaultCore

/// The provider side of the `refresh` benchmark: it issues each credential's first tokens,
/// answers the engine's refreshes (`tokenProvider`), and afterwards tells whether the vault
/// ended up holding live refresh tokens and whether any was presented twice.
protocol TokenSource: Sendable {
    var name: String { get }
    var tokenProvider: any TokenProvider { get }
    /// A new sign-in whose access token lives `lifetime` seconds.
    func issue(lifetime: Double) -> (accessToken: String, refreshToken: String)
    /// Whether the provider would accept this refresh token now (issued, not spent, not revoked).
    func isLive(_ refreshToken: String) -> Bool
    var successfulRefreshes: Int { get }
    var refreshTokensPresentedTwice: Int { get }
    var revokedFamilies: Int { get }
    func shutdown() async
}
