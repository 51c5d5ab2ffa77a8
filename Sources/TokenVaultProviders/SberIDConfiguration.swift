import Foundation
import NIOSSL
import TokenVaultCore

/// The options of a `sber-id` instance (docs/providers/sber-id.md), validated at start-up.
///
/// Sber ID wants mutual TLS with the PKCS#12 certificate issued at registration, so the
/// certificate and its password are required and are opened now: a wrong password or an
/// expired certificate is a start-up error naming the key, not a TLS failure at 3 a.m.
public struct SberIDConfiguration: Sendable {
    public static let knownOptions: Set<String> = [
        "token_endpoint", "client_id", "client_secret_file", "client_secret_credential", "client_certificate_file",
        "client_certificate_password_file", "ca_file", "refresh_grant_type",
    ]
    public static let defaultTokenEndpoint = "https://oauth.sber.ru/ru/prod/tokens/v2/oidc"
    /// Sber documents about 10 s for an answer.

    public let providerName: String
    public let tokenEndpoint: String
    public let clientID: String
    public let timeouts: CallTimeouts
    public let caFile: String?
    /// The refresh request is not documented; the standard grant is assumed, configurable.
    public let refreshGrantType: String
    public let maximumConnections: Int
    let clientSecret: SecretBytes
    let identity: TLSClientIdentity

    /// Nil when `settings.options` is empty: a name-only instance, stored but never refreshed.
    public static func parse(
        _ settings: ProviderSettings, environment: [String: String]
    ) throws(ProviderConfigurationError) -> SberIDConfiguration? {
        guard !settings.options.isEmpty else { return nil }
        return try SberIDConfiguration(settings, environment: environment)
    }

    init(_ settings: ProviderSettings, environment: [String: String]) throws(ProviderConfigurationError) {
        let reader = OptionReader(settings)
        try reader.checkKeys(known: Self.knownOptions.union(OptionReader.timeoutKeys))
        providerName = settings.name
        maximumConnections = max(1, settings.limits.concurrency)

        tokenEndpoint = try (reader.endpoint("token_endpoint")?.description) ?? Self.defaultTokenEndpoint
        clientID = try reader.requiredString("client_id")
        guard let secret = try reader.clientSecret(environment: environment) else {
            throw reader.fail(
                "client_secret_file", "required (or client_secret_credential): Sber ID sends client_secret in the body")
        }
        clientSecret = secret
        timeouts = try reader.timeouts()
        caFile = try reader.caFile()
        refreshGrantType = try reader.string("refresh_grant_type") ?? "refresh_token"
        guard !refreshGrantType.isEmpty, refreshGrantType.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw reader.fail("refresh_grant_type", "must be a grant type name without spaces")
        }
        identity = try Self.readIdentity(reader)
    }

    /// Opens the PKCS#12 file with the password from its own private file.
    private static func readIdentity(_ reader: OptionReader) throws(ProviderConfigurationError) -> TLSClientIdentity {
        guard let path = try reader.string("client_certificate_file"), !path.isEmpty else {
            throw reader.fail(
                "client_certificate_file", "required: Sber ID needs mutual TLS with the PKCS#12 issued at registration")
        }
        guard let passwordPath = try reader.string("client_certificate_password_file"), !passwordPath.isEmpty else {
            throw reader.fail(
                "client_certificate_password_file",
                "required: a file (mode 0600) holding the password of client_certificate_file")
        }
        let password = try SecretFile.read(passwordPath)
            .mapError { reader.fail("client_certificate_password_file", $0.problem) }.get()
        let bundle: NIOSSLPKCS12Bundle
        do {
            bundle = try password.withUnsafeBytes { try NIOSSLPKCS12Bundle(file: path, passphrase: $0) }
        } catch {
            throw reader.fail(
                "client_certificate_file",
                "\(path) cannot be opened as PKCS#12 with the password in \(passwordPath) "
                    + "(wrong password, or not a PKCS#12 file): \(error)")
        }
        guard let leaf = bundle.certificateChain.first else {
            throw reader.fail("client_certificate_file", "\(path) holds no certificate")
        }
        let notAfter = Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter))
        guard notAfter > Date() else {
            throw reader.fail(
                "client_certificate_file", "\(path): the certificate expired on \(notAfter); ask Sber for a new one")
        }
        return TLSClientIdentity(certificateChain: bundle.certificateChain, privateKey: bundle.privateKey)
    }

    var httpSettings: TransportSettings {
        TransportSettings(
            timeouts: timeouts, caFile: caFile, maximumConnections: maximumConnections,
            clientIdentity: identity)
    }
}
