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

/// One provider instance's DPoP state: its key and the latest nonce each server gave (RFC 9449
/// section 8 for the authorization server, 9 for resource servers), shared by the token calls
/// (refresh, code exchange) and the proxy, so a nonce learnt by one is used by the other.
public final class DPoPSession: Sendable {
    public let signer: any DPoPSigner
    private let nonces = Mutex<[String: String]>([:])
    /// Servers remembered at most; past it the oldest half is forgotten (a nonce is only an
    /// optimisation: a server that wants one asks again).
    static let maximumServers = 256

    public init(signer: any DPoPSigner) { self.signer = signer }

    /// A proof for `method` `url`, with the nonce last heard from `url`'s server.
    public func proof(method: String, url: String, accessToken: SecretBytes? = nil) throws -> String {
        let origin = Self.origin(of: url)
        return try signer.proof(
            method: method, url: url, accessToken: accessToken, nonce: nonces.withLock { $0[origin] })
    }

    /// Keeps the `DPoP-Nonce` a server sent with any answer (success or challenge).
    public func remember(nonce: String?, from url: String) {
        guard let nonce, !nonce.isEmpty, nonce.utf8.count <= 1024 else { return }
        let origin = Self.origin(of: url)
        nonces.withLock { nonces in
            if nonces[origin] == nil, nonces.count >= Self.maximumServers {
                for key in nonces.keys.prefix(Self.maximumServers / 2) { nonces[key] = nil }
            }
            nonces[origin] = nonce
        }
    }

    /// `scheme://authority` of a URL: a server's nonce is the server's, whatever the path.
    static func origin(of url: String) -> String {
        guard let separator = url.range(of: "://") else { return url }
        let rest = url[separator.upperBound...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        return url[..<end].lowercased()
    }

    /// Whether an answer is the server asking for another proof: RFC 9449's `use_dpop_nonce`
    /// (section 8) or `invalid_dpop_proof` (a proof refused, e.g. as a replay). Read from the token
    /// endpoint's error body (`error`) or a resource server's `WWW-Authenticate` challenge.
    public static func asksForNewProof(error: String?) -> Bool {
        guard let error = error?.lowercased() else { return false }
        return error == "use_dpop_nonce" || error == "invalid_dpop_proof"
    }
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
