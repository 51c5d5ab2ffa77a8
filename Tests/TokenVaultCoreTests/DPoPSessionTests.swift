import Synchronization
import Testing
import TokenVaultCore

/// Nonces by server: an authorization server's and a resource server's are kept apart even on one
/// origin (RFC 9449 sections 8 and 9), default ports do not make two servers of one.
@Suite struct DPoPSessionTests {
    /// Signs nothing: the "proof" is the nonce it was given.
    private struct NonceEcho: DPoPSigner {
        var thumbprint: String { "t" }
        func proof(method: String, url: String, accessToken: SecretBytes?, nonce: String?) throws -> String {
            nonce ?? "-"
        }
    }

    @Test func eachServerHasItsOwnNonce() throws {
        let session = DPoPSession(signer: NonceEcho())
        let gateway = "https://api.bank.example"
        session.remember(nonce: "as-1", from: .authorization, url: gateway + "/oauth/token")
        session.remember(nonce: "rs-1", from: .resource, url: gateway + "/v1/accounts?x=1")
        #expect(try session.proof(for: .authorization, method: "POST", url: gateway + "/oauth/token") == "as-1")
        #expect(try session.proof(for: .resource, method: "GET", url: gateway + "/v2/other") == "rs-1")
        #expect(try session.proof(for: .resource, method: "GET", url: "https://API.bank.example:443/v1") == "rs-1")
        #expect(try session.proof(for: .resource, method: "GET", url: "https://api.bank.example:8443/v1") == "-")
        #expect(try session.proof(for: .resource, method: "GET", url: "http://api.bank.example/v1") == "-")
        // A newer nonce replaces the older; an empty one is ignored.
        session.remember(nonce: "rs-2", from: .resource, url: gateway + "/")
        session.remember(nonce: "", from: .resource, url: gateway + "/")
        #expect(try session.proof(for: .resource, method: "GET", url: gateway + "/v1") == "rs-2")
    }

    @Test func pastTheLimitNoncesAreForgottenNotGrown() throws {
        let session = DPoPSession(signer: NonceEcho())
        for index in 0..<300 {
            session.remember(nonce: "n\(index)", from: .resource, url: "https://h\(index).example/")
        }
        // The 257th server started afresh: the first ones are gone, the latest are kept.
        #expect(try session.proof(for: .resource, method: "GET", url: "https://h0.example/") == "-")
        #expect(try session.proof(for: .resource, method: "GET", url: "https://h299.example/") == "n299")
    }

    @Test func theChallengesAreTold() {
        #expect(DPoPSession.isNonceChallenge(error: "use_dpop_nonce"))
        #expect(DPoPSession.isNonceChallenge(error: "USE_DPOP_NONCE"))
        #expect(!DPoPSession.isNonceChallenge(error: "invalid_dpop_proof") && !DPoPSession.isNonceChallenge(error: nil))
        #expect(
            DPoPSession.isRefusedProof(error: "invalid_dpop_proof")
                && !DPoPSession.isRefusedProof(error: "invalid_token"))
    }
}
