import Foundation
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// Shared helpers for building provider settings and inspecting configuration errors.
enum ProviderTestSupport {
    static func settings(_ options: [String: JSONValue], name: String = "acme", kind: String = "oauth2")
        -> ProviderSettings
    {
        ProviderSettings(name: name, kind: kind, options: options)
    }

    /// The error building a provider from `options` gives, or nil when it builds (the provider
    /// is shut down at once).
    static func configurationError(
        _ options: [String: JSONValue], environment: [String: String] = [:]
    ) async -> ProviderConfigurationError? {
        do {
            let provider = try OAuth2Provider(settings: settings(options), environment: environment)
            try? await provider.shutdown()
            return nil
        } catch {
            return error
        }
    }

    /// Writes `contents` to a new file with `mode`.
    static func write(_ contents: String, to path: String, mode: Int) {
        writeFile(path, Data(contents.utf8), permissions: mode)
        _ = try? FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    /// A self-signed certificate (prime256v1, valid until 2126), for `ca_file`.
    static let caPEM = """
        -----BEGIN CERTIFICATE-----
        MIIBkTCCATegAwIBAgIUPAu4o5u4OFdJquKR4NSl6d9XBa0wCgYIKoZIzj0EAwIw
        HTEbMBkGA1UEAwwSdG9rZW52YXVsdC10ZXN0LWNhMCAXDTI2MTEyMjA2NDYzNloY
        DzIxMjYxMDI5MDY0NjM2WjAdMRswGQYDVQQDDBJ0b2tlbnZhdWx0LXRlc3QtY2Ew
        WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASOnz45VQrDHsguQ7CjekMPqGPeyhym
        ZMcGRm0x5xUNGIF/pHbWP96mwOdoHO8RCtX7Uog4kDh7wLK2QSTg4X7jo1MwUTAd
        BgNVHQ4EFgQUsPUQfiLchXpM+BcjlGCAd3U9APwwHwYDVR0jBBgwFoAUsPUQfiLc
        hXpM+BcjlGCAd3U9APwwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBF
        AiEAuCMhrWXA7JIfpOYd5dL7N4D7J5FgCHEPmCuFXueDp6YCIG9RDc/ZJtri7UyN
        qHmJX1EqcubbJTB126DmN+pcr8SX
        -----END CERTIFICATE-----

        """
}

// Literals make option dictionaries in tests read like the config file.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
}
