import Foundation
import NIOCore

/// Sign-ins the daemon starts and finishes itself (`credential:authorize`).
extension TokenVaultClient {
    /// How a started sign-in is handed back: a URL for a browser, or the request's parameters for
    /// a mobile SDK that builds the request itself.
    public enum SignInMode: String, Sendable, Encodable {
        case url
        case parameters
        /// The device grant (RFC 8628): a user code to enter at a page; the daemon polls.
        case device
    }

    /// What the daemon answers when a sign-in starts.
    public struct SignInStarted: Codable, Sendable {
        /// Where to send the person (`.url` mode).
        public var authorizationURL: String?
        /// The request's parameters (`.parameters` mode): `state`, `nonce`, `code_challenge`, …
        public var parameters: [String: ParameterValue]?
        /// RFC 3339: the sign-in must be finished before this.
        public var expiresAt: String
        /// Whether the request was pushed to the server first (RFC 9126).
        public var pushed: Bool
        /// `.device` mode: the code the person enters, where, and the seconds between the daemon's polls.
        public var userCode: String?
        public var verificationURI: String?
        public var verificationURIComplete: String?
        public var interval: Int?

        enum CodingKeys: String, CodingKey {
            case authorizationURL = "authorization_url", parameters, expiresAt = "expires_at", pushed
            case userCode = "user_code", verificationURI = "verification_uri"
            case verificationURIComplete = "verification_uri_complete", interval
        }
    }

    /// `GET …/authorization`: the caller's device grants still waiting, and how their last
    /// sign-in into the credential ended.
    public struct SignInStatus: Codable, Sendable {
        public struct Pending: Codable, Sendable {
            public var kind: String
            public var provider: String
            public var startedAt: String
            public var expiresAt: String
            public var nextPollAt: String
            public var interval: Int

            enum CodingKeys: String, CodingKey {
                case kind, provider, startedAt = "started_at", expiresAt = "expires_at", nextPollAt = "next_poll_at"
                case interval
            }
        }

        public struct Ended: Codable, Sendable {
            public var at: String
            /// `authorized` or `failed`.
            public var outcome: String
            /// Why it failed: `access_denied`, `expired_token`, …
            public var reason: String?
        }

        public var pending: [Pending]
        public var last: Ended?
    }

    /// A request parameter's value: one, or several for a name given more than once (RFC 8707's
    /// `resource`), each of which goes into the request as a parameter of its own.
    public enum ParameterValue: Codable, Sendable, Equatable {
        case one(String)
        case many([String])

        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let one = try? container.decode(String.self) {
                self = .one(one)
            } else {
                self = .many(try container.decode([String].self))
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .one(let value): try container.encode(value)
            case .many(let values): try container.encode(values)
            }
        }

        /// Every value, in order.
        public var values: [String] {
            switch self {
            case .one(let value): [value]
            case .many(let values): values
            }
        }
    }

    /// `POST /v1/credentials/{namespace}/{name}/authorization`: starts a sign-in at provider
    /// instance `provider` that finishes into credential `id`. The daemon makes and keeps the
    /// state, PKCE verifier and nonce; `redirectURI` must be one of the instance's `redirect_uris`
    /// (a loopback one on any port). `labels`: the credential's; nil keeps a repaired one's.
    public func startSignIn(
        _ id: String, provider: String, redirectURI: String?, scopes: [String] = [], loginHint: String? = nil,
        prompt: String? = nil, resources: [String] = [], parameters: [String: String] = [:],
        labels: [String: String]? = nil, mode: SignInMode = .url
    ) async throws -> SignInStarted {
        struct Body: Encodable {
            let provider: String
            let redirectURI: String?
            let scopes: [String]
            let loginHint: String?
            let prompt: String?
            let resources: [String]
            let parameters: [String: String]
            let labels: [String: String]?
            let mode: SignInMode
            enum CodingKeys: String, CodingKey {
                case provider, redirectURI = "redirect_uri", scopes, loginHint = "login_hint", prompt, resources
                case parameters, labels, mode
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let body = try encoder.encode(
            Body(
                provider: provider, redirectURI: redirectURI, scopes: scopes, loginHint: loginHint, prompt: prompt,
                resources: resources, parameters: parameters, labels: labels, mode: mode))
        let reply = try await send(
            .post, try Self.credentialPath(id, "/authorization"), body: ByteBuffer(bytes: body), expecting: [201],
            timeout: .seconds(60))
        return try reply.decode(SignInStarted.self)
    }

    /// `GET /v1/credentials/{namespace}/{name}/authorization`: the caller's device grants waiting
    /// for credential `id`, and how the caller's last sign-in into it ended.
    public func signInStatus(_ id: String) async throws -> SignInStatus {
        let reply = try await send(.get, try Self.credentialPath(id, "/authorization"), expecting: [200])
        return try reply.decode(SignInStatus.self)
    }

    /// `POST /v1/credentials/{namespace}/{name}/authorization/callback`: finishes the sign-in the
    /// callback's `state` names with the whole URL the authorization server redirected to. The
    /// daemon redeems the code and stores (or repairs) the credential; never returns a token.
    public func finishSignIn(_ id: String, callbackURL: String) async throws -> (
        credential: CredentialMetadata, created: Bool
    ) {
        let body = try JSONSerialization.data(withJSONObject: ["callback_url": callbackURL])
        let reply = try await send(
            .post, try Self.credentialPath(id, "/authorization/callback"), body: ByteBuffer(bytes: body),
            expecting: [200, 201], timeout: .seconds(60))
        return (try reply.decode(CredentialMetadata.self), reply.status == 201)
    }
}
