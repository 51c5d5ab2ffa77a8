import TokenVaultCore

/// Builds the `TokenProvider` for one configured provider instance, by kind (`ProviderKinds`
/// lists the kinds and reads the settings every kind shares).
public enum ProviderFactory {
    /// The provider, or nil for a name-only instance (no endpoint at all). Every configuration
    /// problem is thrown with its key. `transport` makes how its requests leave (direct by default;
    /// the daemon's go through the courier). `services`: the daemon's signature checks and keys;
    /// without it id tokens are not checked by signature, and an instance that must sign (`dpop`,
    /// `private_key_jwt`) is refused. `dpop`: DPoP sessions of their own (tests).
    public static func make(
        _ settings: ProviderSettings, environment: [String: String],
        transport: TransportMaker = { _, settings in DirectTransport(settings: settings) },
        services: ProviderServices? = nil, dpop: DPoPSessions? = nil
    ) throws(ProviderConfigurationError) -> (any TokenProvider)? {
        let dpop = dpop ?? services?.dpop
        var transport = transport
        if settings.dpop {
            guard !ProviderKinds.storeOnly.contains(settings.kind) else {
                throw ProviderConfigurationError(
                    key: "providers.\(settings.name).dpop",
                    problem: "kind '\(settings.kind)' has no token endpoint: there is nothing to bind with DPoP")
            }
            guard let dpop else {
                throw ProviderConfigurationError(
                    key: "providers.\(settings.name).dpop", problem: "DPoP needs the daemon's keys (tokenvault serve)")
            }
            let plain = transport
            transport = { settings, http in
                DPoPTransport(base: plain(settings, http), sessions: dpop, instance: settings.name)
            }
        }
        switch settings.kind {
        case OAuth2Wire.kind:
            if services == nil, case .string(let method)? = settings.options["client_authentication"],
                ClientAuthentication(rawValue: method)?.usesAssertion == true
            {
                throw ProviderConfigurationError(
                    key: "providers.\(settings.name).client_authentication",
                    problem: "\(method) needs the daemon's keys (tokenvault serve)")
            }
            return try build(OAuth2Wire.self, settings, environment, transport, services)
        case TinkoffIDWire.kind: return try build(TinkoffIDWire.self, settings, environment, transport, services)
        case SberIDWire.kind: return try build(SberIDWire.self, settings, environment, transport, services)
        case ESIAWire.kind: return try build(ESIAWire.self, settings, environment, transport, services)
        case let kind where ProviderKinds.storeOnly.contains(kind):
            try checkStoreOnly(settings)
            return nil
        default:
            let known = ProviderKinds.all.sorted().joined(separator: ", ")
            throw ProviderConfigurationError(
                key: "providers.\(settings.name).kind",
                problem: "unknown provider kind '\(settings.kind.prefix(64))' (known: \(known))")
        }
    }

    /// What a transport for the instance needs (timeouts, CA file, client certificate), or nil for
    /// a name-only or store-only instance. Read from the transport's own options alone: the
    /// courier builds its transports this way, so it reads no client secret and needs no
    /// environment (no `CREDENTIALS_DIRECTORY`); the daemon has checked the whole configuration.
    public static func transportSettings(
        _ settings: ProviderSettings
    ) throws(ProviderConfigurationError) -> TransportSettings? {
        guard !settings.options.isEmpty, !ProviderKinds.storeOnly.contains(settings.kind) else { return nil }
        return try OptionReader(settings).transportSettings(settings.limits)
    }

    /// One kind's provider over the transport `transport` makes for it; nil for a name-only instance.
    private static func build<Wire: ProviderWire>(
        _ wire: Wire.Type, _ settings: ProviderSettings, _ environment: [String: String], _ transport: TransportMaker,
        _ services: ProviderServices?
    ) throws(ProviderConfigurationError) -> (any TokenProvider)? {
        guard let configuration = try Wire.Configuration.parse(settings, environment: environment) else { return nil }
        return KindProvider<Wire>(
            configuration: configuration, transport: transport(settings, configuration.httpSettings), services: services
        )
    }

    /// `ebs` has no options of its own: its only setting, `expired_unit`, is the engine's and was
    /// read with the others (`ProviderKinds`); anything else would be silently unused.
    private static func checkStoreOnly(_ settings: ProviderSettings) throws(ProviderConfigurationError) {
        if let unknown = settings.options.keys.sorted().first {
            throw .option(
                settings.name, unknown,
                "kind '\(settings.kind)' has no token endpoint (its results are never refreshed or revoked); its "
                    + "only option is expired_unit")
        }
    }
}
