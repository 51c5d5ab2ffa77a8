import Foundation
import Logging
import TokenVaultCore

/// Keeps provider instances' server metadata in the vault's plain settings (`vault_meta`, key
/// `provider.metadata.<instance>`): the documents are public, and every node of a shared vault
/// reads the same copy. Each copy carries a tag the keyring makes over the instance name and the
/// copy (`tag`), and one whose tag does not match is ignored: the copy says where refresh tokens
/// and the client's credentials are sent, so a database writer must not be able to plant one.
/// Calls run on NIO's blocking pool: the settings API is synchronous.
public struct KeptProviderMetadataSettings: ProviderMetadataStore {
    private let store: any KeyTermStore
    private let tag: @Sendable ([UInt8]) throws -> [UInt8]
    private let logger: Logger

    /// What is stored: the copy as JSON text, and its tag in hex.
    private struct Stored: Codable {
        var metadata: String
        var tag: String
    }

    public init(store: any KeyTermStore, tag: @escaping @Sendable ([UInt8]) throws -> [UInt8], logger: Logger) {
        self.store = store
        self.tag = tag
        self.logger = logger
    }

    static func key(_ instance: String) -> String { "provider.metadata." + instance }

    private func tag(_ metadata: String, of instance: String) throws -> String {
        try tag(Array(instance.utf8) + [0] + Array(metadata.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    public func keptMetadata(of instance: String) async -> KeptProviderMetadata? {
        let store = store
        guard let text = try? await BlockingWork.run({ try store.setting(Self.key(instance)) }),
            let stored = try? JSONDecoder().decode(Stored.self, from: Data(text.utf8))
        else { return nil }
        guard let expected = try? tag(stored.metadata, of: instance), expected == stored.tag else {
            logger.warning(
                "a kept copy of a provider's server metadata does not carry the vault's tag; it is ignored",
                metadata: ["tokenvault.provider": "\(instance)"])
            return nil
        }
        return try? JSONDecoder().decode(KeptProviderMetadata.self, from: Data(stored.metadata.utf8))
    }

    public func keep(_ metadata: KeptProviderMetadata, of instance: String) async {
        let store = store
        do {
            let json = String(decoding: try JSONEncoder().encode(metadata), as: UTF8.self)
            let stored = Stored(metadata: json, tag: try tag(json, of: instance))
            let text = String(decoding: try JSONEncoder().encode(stored), as: UTF8.self)
            try await BlockingWork.run { try store.setSettings([Self.key(instance): text]) }
        } catch {
            logger.warning(
                "a provider's server metadata could not be kept for restarts",
                metadata: ["tokenvault.provider": "\(instance)", "tokenvault.detail": "\(error)"])
        }
    }
}
