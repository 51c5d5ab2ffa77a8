import Foundation
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultServer

/// Kept server metadata is read back only as the vault wrote it: a copy changed in the database, or
/// moved to another instance's name, is ignored.
@Suite struct KeptProviderMetadataSettingsTests {
    static let metadata = KeptProviderMetadata(
        source: "https://idp.example/.well-known/openid-configuration",
        url: "https://idp.example/.well-known/openid-configuration", readAt: 1_800_000_000,
        document: #"{"issuer":"https://idp.example","token_endpoint":"https://idp.example/token"}"#)

    static func settings(_ store: InMemoryStore, key: [UInt8] = Array(repeating: 7, count: 32))
        -> KeptProviderMetadataSettings
    {
        // A keyed hash stand-in: the keyring's tag is tested with the keyring.
        KeptProviderMetadataSettings(
            store: store,
            tag: { message in
                Array(
                    (key + message).reduce(into: [UInt8](repeating: 0, count: 8)) { tag, byte in
                        tag[Int(byte) % 8] = tag[Int(byte) % 8] &+ byte &* 31
                    })
            }, logger: .init(label: "test"))
    }

    @Test func aCopyIsReadBackOnlyUnchanged() async throws {
        let store = InMemoryStore()
        let kept = Self.settings(store)
        await kept.keep(Self.metadata, of: "idp")
        #expect(await kept.keptMetadata(of: "idp") == Self.metadata)
        #expect(await kept.keptMetadata(of: "other") == nil)
        // Another key (another vault) does not accept it.
        #expect(await Self.settings(store, key: Array(repeating: 8, count: 32)).keptMetadata(of: "idp") == nil)
        // The token endpoint changed in the database, the tag left as it was.
        let stored = try #require(try store.setting(KeptProviderMetadataSettings.key("idp")))
        var wrapper = try #require(try JSONSerialization.jsonObject(with: Data(stored.utf8)) as? [String: String])
        wrapper["metadata"] = wrapper["metadata"]?.replacingOccurrences(of: "idp.example", with: "evil.example")
        try store.setSettings([
            KeptProviderMetadataSettings.key("idp"): String(
                decoding: try JSONSerialization.data(withJSONObject: wrapper), as: UTF8.self)
        ])
        #expect(try store.setting(KeptProviderMetadataSettings.key("idp")) != stored, "the test changed the copy")
        #expect(await kept.keptMetadata(of: "idp") == nil)
        // Copied under another instance's name.
        try store.setSettings([KeptProviderMetadataSettings.key("other"): stored])
        #expect(await kept.keptMetadata(of: "other") == nil)
    }
}
