import TokenVaultCore

/// A provider kind's configuration, read from an instance's options with every problem named by
/// its key: what the shell every kind shares (`KindProvider`) needs of it, and the start every
/// kind's reading shares (`OptionReader.checked`: unknown keys refused, the transport's keys
/// allowed).
public protocol KindConfiguration: Sendable {
    /// The options this kind reads, besides the transport's timeouts.
    static var knownOptions: Set<String> { get }
    /// The instance name credentials use as `provider`.
    var providerName: String { get }
    /// The client id requests are made with (an id token's `aud` must contain it).
    var clientID: String { get }
    /// Timeouts, CA file, client certificate (`OptionReader.transportSettings`).
    var httpSettings: TransportSettings { get }

    init(_ settings: ProviderSettings, environment: [String: String]) throws(ProviderConfigurationError)
}

extension KindConfiguration {
    /// Nil when the instance has no options: a name-only instance, stored but never refreshed.
    public static func parse(
        _ settings: ProviderSettings, environment: [String: String]
    ) throws(ProviderConfigurationError) -> Self? {
        guard !settings.options.isEmpty else { return nil }
        return try Self(settings, environment: environment)
    }

    public var timeouts: CallTimeouts { httpSettings.timeouts }
    public var caFile: String? { httpSettings.caFile }
    public var maximumConnections: Int { httpSettings.maximumConnections }
}

extension OptionReader {
    /// The reader of `settings`, once its keys are checked against what `Kind` reads.
    static func checked<Kind: KindConfiguration>(_ settings: ProviderSettings, for kind: Kind.Type)
        throws(ProviderConfigurationError) -> OptionReader
    {
        let reader = OptionReader(settings)
        try reader.checkKeys(known: Kind.knownOptions.union(OptionReader.transportKeys))
        return reader
    }
}
