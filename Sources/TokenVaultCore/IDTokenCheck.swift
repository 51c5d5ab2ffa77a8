/// The checks a server-side code exchange makes on the id token before storing anything:
/// the `nonce` the app sent with its authorization request, the audience (`aud` must name our
/// client id), the issuer where one is known (a sign-in the vault started) and `exp`. Pure:
/// time comes in.
///
/// The signature is not verified here (Sber ID and ESIA sign with GOST, out of libsodium's
/// reach); the token came straight from the provider's token endpoint over TLS, which is what
/// OIDC Core 3.1.3.7 allows instead.
public enum IDTokenCheck {
    /// Throws `nonce_mismatch`, `audience_mismatch`, `issuer_mismatch` or `id_token_expired` (all
    /// 422 in the API).
    public static func check(
        idToken: SecretBytes?, expectedNonce: String?, clientID: String?, issuer: String? = nil,
        required: Bool = true, now: Timestamp
    ) throws(VaultError) {
        guard let idToken else {
            if expectedNonce != nil, required {
                throw VaultError(
                    code: .nonceMismatch, message: "a nonce was given but the provider returned no id token to check")
            }
            return
        }
        guard let claims = JWTClaims.claims(of: idToken) else {
            throw VaultError(code: .idTokenInvalid, message: "the provider's id token is not a readable JWT")
        }
        if let expectedNonce {
            guard case .string(let nonce)? = claims["nonce"], nonce == expectedNonce else {
                throw VaultError(code: .nonceMismatch, message: "the id token's nonce differs from the one given")
            }
        }
        if let clientID {
            let audiences = JWTClaims.audiences(in: claims)
            guard audiences.contains(clientID) else {
                throw VaultError(
                    code: .audienceMismatch,
                    message:
                        "the id token is for \(audiences.isEmpty ? "no audience" : audiences.joined(separator: ", ")), "
                        + "not this vault's client id \(clientID)")
            }
        }
        if let issuer {
            guard case .string(let claimed)? = claims["iss"], claimed == issuer else {
                throw VaultError(code: .issuerMismatch, message: "the id token was not issued by \(issuer)")
            }
        }
        if let expiry = JWTClaims.seconds(claims["exp"]), expiry <= now.seconds {
            throw VaultError(code: .idTokenExpired, message: "the id token expired at \(Timestamp(seconds: expiry))")
        }
    }
}
