import Foundation
import TokenVaultCore

/// The options of a `tinkoff-id` instance (T-ID, docs/providers/tinkoff-id.md), validated at
/// start-up with every problem named by its key.
///
/// T-ID's endpoints sit at fixed paths under one host, so only the host is configurable (older
/// SDKs used `https://id.tinkoff.ru`). Without a client secret the instance is a public mobile
/// client: it still sends HTTP Basic, as `client_id:` with an empty password, as the SDK does.
public struct TinkoffIDConfiguration: KindConfiguration {
    public static let knownOptions: Set<String> = [
        "host", "client_id", "client_secret_file", "client_secret_credential", "ca_file", "trust_system_roots",
    ]
    public static let defaultHost = "https://id.tbank.ru"

    public let providerName: String
    /// Without a trailing slash.
    public let host: String
    public var tokenEndpoint: String { host + "/auth/token" }
    public var revocationEndpoint: String { host + "/auth/revoke" }
    public let clientID: String
    /// Timeouts and CA file (`OptionReader.transportSettings`).
    public let httpSettings: TransportSettings
    let clientSecret: SecretBytes?
    public var hasClientSecret: Bool { clientSecret != nil }

    public init(_ settings: ProviderSettings, environment: [String: String]) throws(ProviderConfigurationError) {
        let reader = try OptionReader.checked(settings, for: Self.self)
        providerName = settings.name

        let host = try reader.endpoint("host") ?? EndpointURL(url: URL(string: Self.defaultHost)!)
        guard host.url.query == nil else { throw reader.fail("host", "must not have a query") }
        var text = host.description
        while text.hasSuffix("/") { text.removeLast() }
        self.host = text

        clientID = try reader.requiredString("client_id")
        clientSecret = try reader.clientSecret(environment: environment)
        httpSettings = try reader.transportSettings(settings.limits)
    }
}
