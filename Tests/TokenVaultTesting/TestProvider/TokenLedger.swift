import Foundation

/// Every token the test server ever minted and what became of it: the server's side of the truth
/// that tests compare a client against. Pure bookkeeping (no I/O, no clock of its own), used
/// under the server's lock.
struct TokenLedger {
    struct Family {
        var subject: String
        var scopes: [String]
        var nonce: String?
        var revoked = false
    }

    struct AccessToken {
        var familyID: String
        var expiresAt: Date
        var revoked = false
    }

    struct RefreshToken {
        var familyID: String
        var expiresAt: Date?
        /// When it was rotated away; nil while it is the current one.
        var spentAt: Date?
    }

    struct AuthorizationCode {
        var codeChallenge: String?
        var redirectURI: String
        var nonce: String?
        var scopes: [String]
        /// The family its exchange created; set once used.
        var familyID: String?
    }

    /// What a refresh grant came to.
    enum RefreshOutcome {
        case minted(Minted)
        case unknown
        case expired
        case familyRevoked
        /// A spent token, past any grace window. `revokedFamily` when reuse detection killed its family.
        case reused(revokedFamily: Bool)
    }

    /// A new access token, and the refresh token that goes with it (new when rotating).
    struct Minted {
        var familyID: String
        var accessToken: String
        var accessExpiresAt: Date
        var refreshToken: String
        var rotated: Bool
    }

    /// How a refresh grant treats tokens; copied from the options at the time of each request.
    struct Policy {
        var accessLifetime: Double
        var refreshLifetime: Double?
        var rotate: Bool
        var graceWindow: Double
        var reuseDetection: Bool
    }

    private(set) var families: [String: Family] = [:]
    private(set) var accessTokens: [String: AccessToken] = [:]
    private(set) var refreshTokens: [String: RefreshToken] = [:]
    private var codes: [String: AuthorizationCode] = [:]

    // MARK: Minting

    mutating func newFamily(
        scopes: [String], nonce: String? = nil, accessLifetime: Double, refreshLifetime: Double?, now: Date
    ) -> IssuedTokens {
        let familyID = Self.randomToken("fam-", bytes: 12)
        let subject = "user-" + familyID.dropFirst(4)
        families[familyID] = Family(subject: subject, scopes: scopes, nonce: nonce)
        let access = mintAccess(familyID, lifetime: accessLifetime, now: now)
        let refresh = mintRefresh(familyID, lifetime: refreshLifetime, now: now)
        return IssuedTokens(
            accessToken: access, refreshToken: refresh, expiresIn: accessLifetime, familyID: familyID, scopes: scopes,
            subject: subject)
    }

    private mutating func mintAccess(_ familyID: String, lifetime: Double, now: Date) -> String {
        let token = Self.randomToken("at-")
        accessTokens[token] = AccessToken(familyID: familyID, expiresAt: now.addingTimeInterval(lifetime))
        return token
    }

    private mutating func mintRefresh(_ familyID: String, lifetime: Double?, now: Date) -> String {
        let token = Self.randomToken("rt-")
        refreshTokens[token] = RefreshToken(familyID: familyID, expiresAt: lifetime.map { now.addingTimeInterval($0) })
        return token
    }

    /// `prefix` and base64url of random bytes: unguessable, unique, and easy for a leak scan to find.
    static func randomToken(_ prefix: String, bytes: Int = 32) -> String {
        var generator = SystemRandomNumberGenerator()
        return prefix + PKCE.base64URL((0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    // MARK: Grants

    mutating func refresh(_ token: String, policy: Policy, now: Date) -> RefreshOutcome {
        guard let record = refreshTokens[token], let family = families[record.familyID] else { return .unknown }
        guard !family.revoked else { return .familyRevoked }
        if let expiresAt = record.expiresAt, now >= expiresAt { return .expired }
        if let spentAt = record.spentAt, now.timeIntervalSince(spentAt) > policy.graceWindow {
            guard policy.reuseDetection else { return .reused(revokedFamily: false) }
            revokeFamily(record.familyID)
            return .reused(revokedFamily: true)
        }
        // Current, or spent but within the grace window: a fresh pair either way.
        let access = mintAccess(record.familyID, lifetime: policy.accessLifetime, now: now)
        guard policy.rotate else {
            return .minted(
                Minted(
                    familyID: record.familyID, accessToken: access,
                    accessExpiresAt: now.addingTimeInterval(policy.accessLifetime), refreshToken: token,
                    rotated: false))
        }
        if record.spentAt == nil { refreshTokens[token]?.spentAt = now }
        let refresh = mintRefresh(record.familyID, lifetime: policy.refreshLifetime, now: now)
        return .minted(
            Minted(
                familyID: record.familyID, accessToken: access,
                accessExpiresAt: now.addingTimeInterval(policy.accessLifetime), refreshToken: refresh, rotated: true))
    }

    mutating func registerCode(_ code: String, _ grant: AuthorizationCode) { codes[code] = grant }

    enum CodeOutcome {
        case issued(IssuedTokens)
        /// Unknown code, wrong redirect_uri or failed PKCE check; the code stays usable.
        case rejected(String)
        /// The code was used before; `revokedFamily` when the tokens it gave were revoked.
        case replayed(revokedFamily: Bool)
    }

    /// Exchanges a one-time code (RFC 6749 4.1.3, RFC 7636 4.6). A replayed code revokes what
    /// its first exchange issued when `revokeOnReplay` (RFC 6749 4.1.2).
    mutating func exchange(
        code: String, redirectURI: String?, verifier: String?, revokeOnReplay: Bool, accessLifetime: Double,
        refreshLifetime: Double?, now: Date
    ) -> CodeOutcome {
        guard let grant = codes[code] else { return .rejected("unknown authorization code") }
        if let used = grant.familyID {
            guard revokeOnReplay, families[used]?.revoked == false else { return .replayed(revokedFamily: false) }
            revokeFamily(used)
            return .replayed(revokedFamily: true)
        }
        guard redirectURI == grant.redirectURI else { return .rejected("redirect_uri does not match") }
        if let challenge = grant.codeChallenge {
            guard let verifier else { return .rejected("code_verifier is required") }
            guard PKCE.isWellFormedVerifier(verifier) else { return .rejected("code_verifier is malformed") }
            guard PKCE.challenge(for: verifier) == challenge else { return .rejected("PKCE verification failed") }
        }
        let issued = newFamily(
            scopes: grant.scopes, nonce: grant.nonce, accessLifetime: accessLifetime,
            refreshLifetime: refreshLifetime, now: now)
        codes[code]?.familyID = issued.familyID
        return .issued(issued)
    }

    // MARK: Revocation

    mutating func revokeFamily(_ familyID: String) { families[familyID]?.revoked = true }

    /// RFC 7009: a refresh token takes its family with it; an access token goes alone. Unknown
    /// tokens are ignored. Returns whether the token was known.
    @discardableResult
    mutating func revoke(_ token: String) -> Bool {
        if let record = refreshTokens[token] {
            revokeFamily(record.familyID)
            return true
        }
        if accessTokens[token] != nil {
            accessTokens[token]?.revoked = true
            return true
        }
        return false
    }

    // MARK: Queries

    func accessState(_ token: String, now: Date) -> TokenState {
        guard let record = accessTokens[token] else { return .unknown }
        if record.revoked || families[record.familyID]?.revoked != false { return .revoked }
        return now >= record.expiresAt ? .expired : .valid(expiresAt: record.expiresAt)
    }

    func refreshState(_ token: String, graceWindow: Double, now: Date) -> TokenState {
        guard let record = refreshTokens[token] else { return .unknown }
        if families[record.familyID]?.revoked != false { return .revoked }
        if let expiresAt = record.expiresAt, now >= expiresAt { return .expired }
        if let spentAt = record.spentAt {
            let graceEnds = spentAt.addingTimeInterval(graceWindow)
            guard now <= graceEnds else { return .revoked }
            return .valid(expiresAt: min(graceEnds, record.expiresAt ?? .distantFuture))
        }
        return .valid(expiresAt: record.expiresAt ?? .distantFuture)
    }

    func isSpent(_ refreshToken: String) -> Bool { refreshTokens[refreshToken]?.spentAt != nil }

    func familyID(of token: String) -> String? {
        refreshTokens[token]?.familyID ?? accessTokens[token]?.familyID
    }
}
