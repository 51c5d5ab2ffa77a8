import TokenVaultCore

/// The options of an `esia` instance (docs/providers/esia.md), validated at start-up.
///
/// ESIA signs nothing for us: `client_secret` is a GOST signature made per request by an
/// operator-configured signer program, so the program is checked now (absolute path, executable)
/// and `scope` and `redirect_uri`, which are part of what is signed, are required.
public struct ESIAConfiguration: KindConfiguration {
    public static let knownOptions: Set<String> = [
        "token_endpoint", "client_id", "client_certificate_hash", "signer_command", "signer_timeout_seconds",
        "scope", "redirect_uri", "ca_file", "trust_system_roots",
    ]
    public static let defaultTokenEndpoint = "https://esia.gosuslugi.ru/aas/oauth2/v3/te"
    public static let defaultSignerTimeoutSeconds: Double = 5

    public let providerName: String
    public let tokenEndpoint: String
    public let clientID: String
    /// Sent as `client_certificate_hash`: the hash of the certificate the signer signs with.
    public let clientCertificateHash: String
    /// argv of the signer; `signerCommand[0]` is an absolute path.
    public let signerCommand: [String]
    public let signerTimeoutSeconds: Double
    /// Space-separated, sent (and signed) on every request.
    public let scope: String
    /// Sent (and signed) on refresh; an exchange uses the request's own.
    public let redirectURI: String
    /// Timeouts and CA file (`OptionReader.transportSettings`).
    public let httpSettings: TransportSettings

    /// ESIA reads no secret (the signer holds the key): `environment` is unused.
    public init(_ settings: ProviderSettings, environment: [String: String] = [:]) throws(ProviderConfigurationError) {
        let reader = try OptionReader.checked(settings, for: Self.self)
        providerName = settings.name

        tokenEndpoint = try (reader.endpoint("token_endpoint")?.description) ?? Self.defaultTokenEndpoint
        clientID = try reader.requiredString("client_id")
        clientCertificateHash = try reader.requiredString(
            "client_certificate_hash", why: "required: the hash of the certificate the signer signs with")
        scope = try reader.requiredString("scope", why: "required: ESIA wants the scope on every token request")
        redirectURI = try reader.requiredString(
            "redirect_uri", why: "required: a refresh sends (and signs) the redirect_uri registered at ESIA")
        for (key, value) in [("client_id", clientID), ("client_certificate_hash", clientCertificateHash)]
        where value.contains(where: { $0.isWhitespace || $0.isNewline }) {
            throw reader.fail(key, "must not contain spaces")
        }

        guard let command = try reader.stringArray("signer_command"), let program = command.first else {
            throw reader.fail(
                "signer_command",
                "required: the signer's argv, e.g. [\"/usr/local/bin/esia-sign\", \"--key\", \"vault\"]; it reads "
                    + "the string to sign on stdin and prints the base64url signature")
        }
        if let index = command.firstIndex(where: { $0.contains("\0") }) {
            throw reader.fail("signer_command[\(index)]", "must not contain NUL")
        }
        _ = try reader.executable("signer_command[0]", program)
        signerCommand = command
        signerTimeoutSeconds =
            try reader.number("signer_timeout_seconds", in: 0.01...120)
            ?? Self.defaultSignerTimeoutSeconds
        httpSettings = try reader.transportSettings(settings.limits)
    }
}
