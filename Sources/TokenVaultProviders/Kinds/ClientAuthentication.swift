import Foundation
import NIOHTTP1
import TokenVaultCore

/// How the client proves its identity at the token and revocation endpoints (RFC 6749 §2.3.1).
public enum ClientAuthentication: String, Sendable, Equatable, CaseIterable {
    /// `Authorization: Basic` with the form-urlencoded id and secret. Without a secret the
    /// password is empty: T-ID's public (mobile) clients authenticate as `client_id:`.
    case clientSecretBasic = "client_secret_basic"
    /// `client_id` and `client_secret` in the form body.
    case clientSecretPost = "client_secret_post"
    /// A public client: `client_id` in the form body, no secret.
    case none
    /// RFC 7523 section 2.2: a JWT signed with the instance's client key (`ClientKey`), whose
    /// public half the server has registered (`tokenvault providers jwks NAME`).
    case privateKeyJWT = "private_key_jwt"
    /// The same JWT, signed HS256 with the client secret (OpenID Connect Core section 9).
    case clientSecretJWT = "client_secret_jwt"
    /// RFC 8705 section 2.1: the TLS client certificate (`client_certificate_file`), issued by a CA
    /// the server trusts; `client_id` in the body.
    case tlsClientAuth = "tls_client_auth"
    /// RFC 8705 section 2.2: a self-signed TLS client certificate the server has registered.
    case selfSignedTLSClientAuth = "self_signed_tls_client_auth"

    /// Whether the client proves itself with a signed JWT (`client_assertion`).
    var usesAssertion: Bool { self == .privateKeyJWT || self == .clientSecretJWT }

    /// Adds the client's credentials to a request's headers or form; `assertion`: the signed JWT of
    /// the JWT methods (`ClientAssertion`).
    func apply(
        clientID: String, secret: SecretBytes?, assertion: SecretBytes? = nil, headers: inout HTTPHeaders,
        form: inout FormBody
    ) {
        switch self {
        case .clientSecretBasic:
            var pair: [UInt8] = []
            FormEncoding.escape(clientID.utf8, into: &pair)
            pair.append(UInt8(ascii: ":"))
            secret?.withUnsafeBytes { FormEncoding.escape($0, into: &pair) }
            headers.replaceOrAdd(name: "Authorization", value: "Basic " + Data(pair).base64EncodedString())
        case .clientSecretPost:
            form.append("client_id", clientID)
            if let secret { form.append("client_secret", secret: secret) }
        case .none, .tlsClientAuth, .selfSignedTLSClientAuth:
            form.append("client_id", clientID)
        case .privateKeyJWT, .clientSecretJWT:
            // RFC 7521 section 4.2: the assertion identifies the client; `client_id` is sent too, as
            // OpenID Connect Core section 9 allows and some servers need to find the client's key.
            form.append("client_id", clientID)
            form.append("client_assertion_type", ClientAssertion.type)
            if let assertion { form.append("client_assertion", secret: assertion) }
        }
    }
}
