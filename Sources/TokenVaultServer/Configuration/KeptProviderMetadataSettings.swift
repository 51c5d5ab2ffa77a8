import Foundation
import Logging
import TokenVaultCore

/// Keeps provider instances' server metadata in the vault's plain settings (`vault_meta`, key
/// `provider.metadata.<instance>`): the documents are public, and every node of a shared vault
/// reads the same copy. Calls run on NIO's blocking pool: the settings API is synchronous.
public struct KeptProviderMetadataSettings: ProviderMetadataStore {
    private let store: any KeyTermStore
    private let logger: Logger

    public init(store: any KeyTermStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    static func key(_ instance: String) -> String { "provider.metadata." + instance }

    public func keptMetadata(of instance: String) async -> KeptProviderMetadata? {
        let store = store
        guard let text = try? await BlockingWork.run({ try store.setting(Self.key(instance)) }) else { return nil }
        return try? JSONDecoder().decode(KeptProviderMetadata.self, from: Data(text.utf8))
    }

    public func keep(_ metadata: KeptProviderMetadata, of instance: String) async {
        let store = store
        do {
            let text = String(decoding: try JSONEncoder().encode(metadata), as: UTF8.self)
            try await BlockingWork.run { try store.setSettings([Self.key(instance): text]) }
        } catch {
            logger.warning(
                "a provider's server metadata could not be kept for restarts",
                metadata: ["tokenvault.provider": "\(instance)", "tokenvault.detail": "\(error)"])
        }
    }
}
