import Synchronization
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultEngine
import TokenVaultLedger
import TokenVaultProviders
import TokenVaultServer

/// The daemon's webhook endpoints: a sender per endpoint of the `webhooks` section (its secret
/// file read, its URL checked by the providers' transport rule), put in force with the section's
/// routes in the ledger and its retry settings in the dispatcher, at start-up and on each reload
/// that changes the section. Senders a reload replaced are shut down once their deliveries can
/// no longer be running (a claim's length), or with the daemon.
final class WebhookEndpoints: Sendable {
    let dispatcher: WebhookDispatcher
    private let vault: Vault
    private struct State {
        var current: [WebhookSender] = []
        /// The claims' length the current senders deliver under.
        var leaseSeconds = 0.0
        var retiring: [UInt64: Task<Void, Never>] = [:]
        var nextRetirement: UInt64 = 0
    }
    private let state = Mutex(State())

    init(dispatcher: WebhookDispatcher, vault: Vault) {
        self.dispatcher = dispatcher
        self.vault = vault
    }

    /// Builds the section's senders (nothing is in force yet): `install` puts them in force,
    /// `discard` shuts them down unused (a reload refused for another section). Throws
    /// `ProviderConfigurationError` naming the key of what cannot be built, having shut down
    /// what it built.
    func prepare(_ settings: WebhookSettings) async throws -> ConfigurationReload.PreparedWebhooks {
        var built: [String: WebhookSender] = [:]
        do {
            for endpoint in settings.endpoints {
                built[endpoint.name] = try Self.sender(endpoint, settings)
            }
        } catch {
            for sender in built.values { await sender.shutdown() }
            throw error
        }
        let options = WebhookDispatcher.Options(
            retry: settings.retry, concurrency: settings.maximumConcurrentDeliveries,
            // Longer than any attempt can take, so a claim never lapses under a living delivery.
            leaseSeconds: CallTimeouts(readSeconds: Double(settings.timeoutSeconds)).callDeadlineSeconds + 30)
        let routes = settings.routes
        let made = built
        return ConfigurationReload.PreparedWebhooks(
            install: { [self] in
                vault.install(webhooks: routes)
                dispatcher.install(senders: made, options: options)
                let (replaced, lease) = state.withLock { state in
                    defer { (state.current, state.leaseSeconds) = (Array(made.values), options.leaseSeconds) }
                    return (state.current, state.leaseSeconds)
                }
                // A delivery begun on them may run for their own (perhaps longer) claim.
                retire(replaced, after: max(lease, options.leaseSeconds))
            },
            discard: { for sender in made.values { await sender.shutdown() } })
    }

    private static func sender(_ endpoint: WebhookSettings.Endpoint, _ settings: WebhookSettings) throws
        -> WebhookSender
    {
        let key = "webhooks.endpoints.\(endpoint.name)"
        let secret = try WebhookSender.secret(file: endpoint.secretFile, key: key + ".secret_file")
        let signer: WebhookSigner
        do {
            signer = try WebhookSigner(secret: secret)
        } catch {
            throw ProviderConfigurationError(key: key + ".secret_file", problem: error.message)
        }
        let transport = TransportSettings(
            timeouts: CallTimeouts(readSeconds: Double(settings.timeoutSeconds)), caFile: endpoint.caFile,
            trustsSystemRoots: endpoint.trustsSystemRoots, maximumConnections: settings.maximumConcurrentDeliveries)
        return try WebhookSender(url: endpoint.url, settings: transport, key: key + ".url", sign: signer.headers)
    }

    /// Shuts `senders` down once a delivery begun on them must have ended.
    private func retire(_ senders: [WebhookSender], after seconds: Double) {
        guard !senders.isEmpty else { return }
        state.withLock { state in
            let id = state.nextRetirement
            state.nextRetirement += 1
            state.retiring[id] = Task { [self] in
                try? await Task.sleep(for: .seconds(seconds))
                for sender in senders { await sender.shutdown() }
                _ = self.state.withLock { $0.retiring.removeValue(forKey: id) }
            }
        }
    }

    /// Closes every sender's connections (at the daemon's end, after the dispatcher stopped).
    func shutdown() async {
        let (current, retiring) = state.withLock { ($0.current, Array($0.retiring.values)) }
        for task in retiring { task.cancel() }
        for task in retiring { await task.value }
        for sender in current { await sender.shutdown() }
    }
}
