import Foundation
import NIOSSL
import TokenVaultCore

/// The options of a `sber-id` instance (docs/providers/sber-id.md), validated at start-up.
///
/// Sber ID wants mutual TLS with the PKCS#12 certificate issued at registration, so the
/// certificate and its password are required and are opened now: a wrong password or an
/// expired certificate is a start-up error naming the key, not a TLS failure at 3 a.m.
public struct SberIDConfiguration: KindConfiguration {
    public static let knownOptions: Set<String> = [
        "token_endpoint", "client_id", "client_secret_file", "client_secret_credential", "client_certificate_file",
        "client_certificate_password_file", "ca_file", "trust_system_roots", "refresh_grant_type",
        "authorization_endpoint", "redirect_uris",
    ]
    public static let defaultTokenEndpoint = "https://oauth.sber.ru/ru/prod/tokens/v2/oidc"
    /// Sber ID's web sign-in page (the browser flow; the SDK's flow starts in the app).
    public static let defaultAuthorizationEndpoint = "https://id.sber.ru/CSAFront/oidc/authorize.do"
    /// Sber documents about 10 s for an answer.

    public let providerName: String
    public let tokenEndpoint: String
    public let clientID: String
    /// The refresh request is not documented; the standard grant is assumed, configurable.
    public let refreshGrantType: String
    /// Where a sign-in the vault starts sends the person (`mode: url`).
    public let authorizationEndpoint: String
    /// Where sign-ins may send the person back to: the redirect URIs registered with Sber; empty,
    /// the instance cannot start sign-ins.
    public let redirectURIs: [String]
    let clientSecret: SecretBytes
    /// Timeouts, CA file and the mutual-TLS identity (`OptionReader.transportSettings`).
    public let httpSettings: TransportSettings

    public init(_ settings: ProviderSettings, environment: [String: String]) throws(ProviderConfigurationError) {
        let reader = try OptionReader.checked(settings, for: Self.self)
        providerName = settings.name

        tokenEndpoint = try (reader.endpoint("token_endpoint")?.description) ?? Self.defaultTokenEndpoint
        clientID = try reader.requiredString("client_id")
        guard let secret = try reader.clientSecret(environment: environment) else {
            throw reader.fail(
                "client_secret_file", "required (or client_secret_credential): Sber ID sends client_secret in the body")
        }
        clientSecret = secret
        refreshGrantType = try reader.string("refresh_grant_type") ?? "refresh_token"
        guard !refreshGrantType.isEmpty, refreshGrantType.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw reader.fail("refresh_grant_type", "must be a grant type name without spaces")
        }
        httpSettings = try reader.transportSettings(settings.limits)
        authorizationEndpoint =
            try (reader.endpoint("authorization_endpoint")?.description) ?? Self.defaultAuthorizationEndpoint
        redirectURIs = try reader.redirectURIs()
    }
}
