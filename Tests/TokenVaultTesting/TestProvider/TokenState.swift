import Foundation

/// What the test server thinks of a token right now, for assertions such as "no expired token
/// was served". A rotated (spent) refresh token reads `.revoked` once any grace window is over:
/// the server no longer accepts it (`TestOAuthServer.isSpent` tells spent from revoked).
public enum TokenState: Sendable, Equatable {
    /// Accepted; `expiresAt` is `Date.distantFuture` for a refresh token without a lifetime.
    case valid(expiresAt: Date)
    case expired
    case revoked
    /// Never issued by this server.
    case unknown
}
