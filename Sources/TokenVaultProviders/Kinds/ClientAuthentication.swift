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

    /// Adds the client's credentials to a request's headers or form.
    func apply(clientID: String, secret: SecretBytes?, headers: inout HTTPHeaders, form: inout FormBody) {
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
        case .none:
            form.append("client_id", clientID)
        }
    }
}
