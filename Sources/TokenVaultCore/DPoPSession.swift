import Synchronization

/// Makes DPoP proofs (RFC 9449) with a private key the vault holds and never hands out. The
/// signature and hashing live in TokenVaultCrypto (`DPoPKey`); Core only names what a proof says.
public protocol DPoPSigner: Sendable {
    /// The public key's JWK SHA-256 thumbprint (RFC 7638), base64url: what a provider binds
    /// tokens to (`cnf.jkt`).
    var thumbprint: String { get }
    /// A new proof for one request: `htm` `method`, `htu` `url` without its query and fragment,
    /// a fresh `jti`, `iat` now; `ath` (the access token's hash) when `accessToken` is given, and
    /// `nonce` when the server asked for one.
    func proof(method: String, url: String, accessToken: SecretBytes?, nonce: String?) throws -> String
}

/// Where an instance's DPoP key comes from (the keyring, which derives it from a sealed seed).
public protocol DPoPKeySource: Sendable {
    func signer(for instance: String) throws -> any DPoPSigner
}

/// Which kind of server a DPoP nonce came from: RFC 9449 keeps the authorization server's
/// (section 8) and a resource server's (section 9) apart, even on one origin (an API gateway).
public enum DPoPServer: Sendable {
    /// The token endpoint: proofs without `ath`.
    case authorization
    /// An API the proxy calls: proofs with `ath`.
    case resource
}

/// One provider instance's DPoP state: its key and the latest nonce each server gave, shared by
/// the token calls (refresh, code exchange) and the proxy.
public final class DPoPSession: Sendable {
    public let signer: any DPoPSigner
    private let nonces = Mutex<[String: String]>([:])
    /// Servers remembered at most; past it all are forgotten (a nonce only saves a round trip: a
    /// server that wants one asks again).
    static let maximumServers = 256

    public init(signer: any DPoPSigner) { self.signer = signer }

    /// A proof for `method` `url`, with the nonce last heard from that server; `accessToken` for
    /// a resource server's proof (its hash is `ath`).
    public func proof(for server: DPoPServer, method: String, url: String, accessToken: SecretBytes? = nil)
        throws -> String
    {
        let key = Self.key(server, url)
        return try signer.proof(method: method, url: url, accessToken: accessToken, nonce: nonces.withLock { $0[key] })
    }

    /// Keeps the `DPoP-Nonce` a server sent with any answer (success or challenge).
    public func remember(nonce: String?, from server: DPoPServer, url: String) {
        guard let nonce, !nonce.isEmpty, nonce.utf8.count <= 1024 else { return }
        let key = Self.key(server, url)
        nonces.withLock { nonces in
            if nonces[key] == nil, nonces.count >= Self.maximumServers { nonces.removeAll() }
            nonces[key] = nonce
        }
    }

    static func key(_ server: DPoPServer, _ url: String) -> String {
        (server == .authorization ? "as " : "rs ") + origin(of: url)
    }

    /// `scheme://host[:port]` of a URL, lower-cased, without the scheme's default port: a
    /// server's nonce is the server's, whatever the path.
    static func origin(of url: String) -> String {
        guard let separator = url.range(of: "://") else { return url }
        let rest = url[separator.upperBound...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let origin = url[..<end].lowercased()
        for (scheme, port) in [("https://", ":443"), ("http://", ":80")]
        where origin.hasPrefix(scheme) && origin.hasSuffix(port) {
            return String(origin.dropLast(port.count))
        }
        return origin
    }

    /// Whether an answer is RFC 9449's nonce challenge (`use_dpop_nonce`): the server refused the
    /// request before acting on it, and wants the nonce it sent in `DPoP-Nonce`.
    public static func isNonceChallenge(error: String?) -> Bool { error?.lowercased() == "use_dpop_nonce" }

    /// Whether a resource server refused the proof itself (`invalid_dpop_proof`: a `jti` it has
    /// seen, a stale `iat`). The request may have reached it before, so only a call that may be
    /// made twice is sent again.
    public static func isRefusedProof(error: String?) -> Bool { error?.lowercased() == "invalid_dpop_proof" }
}

/// The sessions of the daemon's DPoP instances, one per instance name, made on first use. The
/// keys come from the keyring, which the daemon opens after it has checked (built) its provider
/// instances: `use(_:)` hands them over then, and until it has, no proof can be made.
public final class DPoPSessions: Sendable {
    private let keys: Mutex<(any DPoPKeySource)?>
    private let sessions = Mutex<[String: DPoPSession]>([:])

    public init(keys: (any DPoPKeySource)? = nil) { self.keys = Mutex(keys) }

    public func use(_ keys: any DPoPKeySource) { self.keys.withLock { $0 = keys } }

    public func session(for instance: String) throws -> DPoPSession {
        if let session = sessions.withLock({ $0[instance] }) { return session }
        guard let keys = keys.withLock({ $0 }) else {
            throw VaultError.integrity("the vault's keys are not open yet: no DPoP proof can be made")
        }
        let made = DPoPSession(signer: try keys.signer(for: instance))
        return sessions.withLock { sessions in
            if let existing = sessions[instance] { return existing }
            sessions[instance] = made
            return made
        }
    }
}
