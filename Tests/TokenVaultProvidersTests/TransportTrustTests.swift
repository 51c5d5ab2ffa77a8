import NIOSSL
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultProviders

/// Whom an instance's TLS trusts: the system roots, or `ca_file` instead of them, or both when
/// `trust_system_roots` says so.
@Suite struct TransportTrustTests {
    static func transport(_ options: [String: JSONValue]) throws -> TransportSettings {
        let settings = ProviderTestSupport.settings(
            ["token_endpoint": "https://id.example.com/token", "client_id": "app"].merging(options) { $1 })
        return try #require(try OAuth2Configuration.parse(settings, environment: [:])).httpSettings
    }

    static func caFile(in directory: TemporaryDirectory) -> String {
        let path = directory.file("ca.pem")
        ProviderTestSupport.write(ProviderTestSupport.caPEM, to: path, mode: 0o644)
        return path
    }

    @Test func withoutACAFileTheSystemRootsAreTrusted() throws {
        let tls = try Self.transport([:]).tlsConfiguration()
        #expect(tls.trustRoots == .default)
        #expect(tls.additionalTrustRoots.isEmpty)
    }

    /// A private CA's bundle alone: no public CA can vouch for the server.
    @Test func aCAFileIsTrustedInsteadOfTheSystemRoots() throws {
        let directory = TemporaryDirectory()
        let path = Self.caFile(in: directory)
        let transport = try Self.transport(["ca_file": .string(path)])
        #expect(!transport.trustsSystemRoots)
        let tls = transport.tlsConfiguration()
        #expect(tls.trustRoots == .file(path))
        #expect(tls.additionalTrustRoots.isEmpty)
    }

    @Test func trustSystemRootsKeepsBoth() throws {
        let directory = TemporaryDirectory()
        let path = Self.caFile(in: directory)
        let tls = try Self.transport(["ca_file": .string(path), "trust_system_roots": true]).tlsConfiguration()
        #expect(tls.trustRoots == .default)
        #expect(tls.additionalTrustRoots == [.file(path)])
    }

    @Test func trustSystemRootsWithoutACAFileIsRefused() async {
        let error = await ProviderTestSupport.configurationError([
            "token_endpoint": "https://id.example.com/token", "client_id": "app", "trust_system_roots": true,
        ])
        #expect(error?.key == "providers.acme.trust_system_roots")
    }
}
