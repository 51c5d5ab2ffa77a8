import Synchronization
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultEngine
import TokenVaultProviders
import TokenVaultServer

/// The daemon's webhook endpoints: a sender per endpoint of the `webhooks` section (its secret
/// file read, its URL checked by the providers' transport rule), put in force with the section's
/// routes in the ledger and its retry settings in the dispatcher, at start-up and on each reload
/// that changes the section. Replaced senders finish their deliveries and are shut down with the
/// daemon.
final class WebhookEndpoints: Sendable {
    let dispatcher: WebhookDispatcher
    private let vault: Vault
    private let senders = Mutex<[WebhookSender]>([])

    init(dispatcher: WebhookDispatcher, vault: Vault) {
        self.dispatcher = dispatcher
        self.vault = vault
    }

    /// Builds the section's senders; the closure returned puts them in force. Throws
    /// `ProviderConfigurationError` naming the key of what cannot be built.
    func prepare(_ settings: WebhookSettings) throws -> @Sendable () -> Void {
        var built: [String: WebhookSender] = [:]
        for endpoint in settings.endpoints {
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
                maximumConnections: settings.maximumConcurrentDeliveries)
            built[endpoint.name] = try WebhookSender(
                url: endpoint.url, settings: transport, key: key + ".url", sign: signer.headers)
        }
        let options = WebhookDispatcher.Options(
            retry: settings.retry, concurrency: settings.maximumConcurrentDeliveries,
            // Longer than any attempt can take, so a claim never lapses under a living delivery.
            leaseSeconds: CallTimeouts(readSeconds: Double(settings.timeoutSeconds)).callDeadlineSeconds + 30)
        let routes = settings.routes
        let made = built
        return { [self] in
            senders.withLock { $0 += made.values }
            vault.install(webhooks: routes)
            dispatcher.install(senders: made, options: options)
        }
    }

    /// Closes every sender's connections (at the daemon's end).
    func shutdown() async {
        for sender in senders.withLock({ $0 }) { await sender.shutdown() }
    }
}
