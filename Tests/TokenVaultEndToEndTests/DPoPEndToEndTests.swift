import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultStorage
import TokenVaultTesting

@testable import TokenVaultCrypto

/// DPoP (RFC 9449) through the built daemon, against a loopback token endpoint and resource
/// server that check every proof (`DPoPVerifier`): a refresh binds the new tokens to the vault's
/// key, proxied calls prove possession of it, nonce challenges and a refused proof are answered
/// with a fresh proof, and the key is the same after a restart and a `rotate-key`.
@Suite struct DPoPEndToEndTests {
    /// The token endpoint's record of bindings, for the resource server made before it.
    private final class Bindings: Sendable {
        let server = Mutex<TestOAuthServer?>(nil)
        func key(of token: String) -> String? { server.withLock { $0 }?.boundKey(of: token) }
    }

    /// Forced refreshes are a second apart at least (`limits.on_demand_refresh_seconds`).
    private func request(_ socket: String, _ method: String, _ target: String) async throws -> RawHTTPResponse {
        if target.hasSuffix("/refresh") { try await Task.sleep(for: .seconds(1.1)) }
        return try await offThePool {
            try UnixSocketHTTP.request(socket, method, target, body: method == "POST" ? "{}" : nil)
        }
    }

    @Test func tokensAreBoundToTheVaultsKeyAndProxiedCallsProveIt() async throws {
        let tokenEndpoint = DPoPVerifier()
        let resource = DPoPVerifier()
        let bindings = Bindings()
        let upstream = try await TestUpstream(dpop: (resource, { bindings.key(of: $0) }))
        let harness = try await ResilienceHarness(
            lifetime: 3600, limits: "{}", refresh: "{}", sections: #""limits": {"on_demand_refresh_seconds": 1}"#,
            dpop: tokenEndpoint,
            idpOptions: #""dpop": true, "api_base_urls": ["\#(upstream.base)/"]"#)
        bindings.server.withLock { $0 = harness.server }
        var daemon = try await offThePool { try harness.startDaemon(logLevel: "debug") }
        defer {
            _ = daemon.terminate()
            Task { await upstream.stop() }
        }
        try await offThePool { try harness.seed(1) }
        let credential = "/v1/credentials/" + ResilienceHarness.name(0)

        // A refresh: the server's nonce challenge is answered once; the new tokens are bound.
        let refreshed = try await request(harness.socket, "POST", credential + "/refresh")
        try #require(refreshed.status == 200, "\(refreshed.text)\n\(daemon.log.suffix(3000))")
        #expect(tokenEndpoint.nonceChallenges == 1)
        let key = try #require(tokenEndpoint.acceptedKeys.first)
        let read = try await request(harness.socket, "GET", credential + "/token").json()
        let token = try #require(read["access_token"] as? String)
        #expect(harness.server.boundKey(of: token) == key && read["token_type"] as? String == "DPoP")

        // A proxied call: the resource server's own nonce, then the call with `Authorization: DPoP`.
        let call = try await request(harness.socket, "GET", credential + "/proxy/dpop")
        #expect(call.status == 200, "\(call.text)")
        #expect(resource.nonceChallenges == 1 && resource.acceptedKeys == [key])
        #expect(upstream.authorizations.last == "DPoP \(token)")
        let proof = try #require(resource.acceptedProofs.last)
        let claims = DPoPVerifier.claims(of: proof)
        #expect(claims["htm"] as? String == "GET" && claims["htu"] as? String == upstream.base + "/dpop")
        #expect(claims["nonce"] as? String == resource.nonce && claims["ath"] != nil)

        // The proof replayed by someone who saw it is refused by the server...
        let replayed = try await TestHTTPClient.request(
            "GET", upstream.base + "/dpop", headers: ["Authorization": "DPoP \(token)", "DPoP": proof])
        #expect(replayed.status == 401 && replayed.headers["www-authenticate"]?.contains("invalid_dpop_proof") == true)
        // ...and a proof the server refuses (as if its replay cache held it) gets a fresh one.
        resource.refuseNextAsReplayed()
        let recovered = try await request(harness.socket, "GET", credential + "/proxy/dpop")
        #expect(recovered.status == 200, "\(recovered.text)")
        #expect(resource.acceptedProofs.count == 2)

        // A restart, then a rotate-key: the refresh token is bound to the key, so a refresh with
        // any other key would be refused `invalid_grant`.
        #expect(daemon.terminate() == 0)
        daemon = try await offThePool { try harness.startDaemon(logLevel: "debug") }
        let afterRestart = try await request(harness.socket, "POST", credential + "/refresh")
        #expect(afterRestart.status == 200, "\(afterRestart.text)")
        let rotated = try await request(harness.socket, "POST", "/v1/admin/rotate-key")
        #expect(rotated.status == 200, "\(rotated.text)")
        let afterRotation = try await request(harness.socket, "POST", credential + "/refresh")
        #expect(afterRotation.status == 200, "\(afterRotation.text)")
        #expect(Set(tokenEndpoint.acceptedKeys) == [key] && tokenEndpoint.acceptedKeys.count == 3)
        let latest = try #require(
            try await request(harness.socket, "GET", credential + "/token").json()["access_token"] as? String)
        #expect(harness.server.boundKey(of: latest) == key)
        #expect(try await request(harness.socket, "GET", credential + "/proxy/dpop").status == 200)
        #expect(Set(resource.acceptedKeys) == [key])
        #expect(harness.server.revokedFamilies == 0)
        #expect(ResilienceHarness.leakedTokens(in: daemon.log).isEmpty)
        #expect(try await offThePool { try harness.verify() }.status == 0)

        // The key, derived as the daemon derives it, is in no file the test left: not the
        // database or its WAL, not the spool, not the daemons' logs.
        #expect(daemon.terminate() == 0)
        try Self.expectKeyNowhere(harness, thumbprint: key)
    }

    private static func expectKeyNowhere(_ harness: ResilienceHarness, thumbprint: String) throws {
        let database = try SQLiteDatabase(
            path: harness.dataDir + "/vault.db", checksum: TokenVaultCrypto.SHA256.hex, clock: SystemClock())
        let keyring = try Keyring(
            masterKey: try MasterKey.read(keyFile: harness.dataDir + "/master.key"), store: database)
        let seed = try #require(keyring.secret(.dpopSeed))
        var scalar = Keyring.derivedScalar(seed: seed, label: "tokenvault.dpop-key.v1", instance: "idp", counter: 0)
        defer { scalar.wipe() }
        #expect(try DPoPKey(scalar: scalar, clock: SystemClock()).thumbprint == thumbprint)
        var needles: [[UInt8]] = []
        for secret in [seed.withUnsafeBytes { Array($0) }, scalar] {
            let base64 = Data(secret).base64EncodedString()
            let base64URL = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            needles += [
                secret, Array(secret.map { String(format: "%02x", $0) }.joined().utf8), Array(base64.utf8),
                Array(base64URL.utf8),
            ]
        }
        let files = FileManager.default.enumerator(atPath: harness.directory.path)?.allObjects as? [String] ?? []
        var searched: [String] = []
        for file in files {
            let bytes = RawBytes.read(harness.directory.file(file))
            guard !bytes.isEmpty else { continue }
            searched.append(file)
            for needle in needles { #expect(!RawBytes.contains(bytes, needle), "the DPoP key is in \(file)") }
        }
        #expect(searched.contains("data/vault.db") && searched.contains { $0.hasSuffix(".log") }, "\(searched)")
    }
}
