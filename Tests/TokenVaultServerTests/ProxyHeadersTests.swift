import Testing
import TokenVaultCore

@testable import TokenVaultServer

/// What of an upstream's answer goes back to the caller: never a header that carries the token
/// the call was sent with, in whatever form a URL or an echo writes it.
@Suite struct ProxyHeadersTests {
    static let token = SecretBytes(Array("eyJ0+a/b=c".utf8))

    @Test(arguments: [
        "eyJ0+a/b=c", "Bearer eyJ0+a/b=c", "https://x.example/cb?t=eyJ0%2Ba%2Fb%3Dc&y=1",
        "https://x.example/cb?t=eyJ0%2ba%2fb%3dc", "%65%79%4A%30%2B%61%2F%62%3D%63",
        "<https://x/?eyJ0+a%2Fb=c>; rel=next",
    ])
    func aHeaderCarryingTheTokenIsFound(value: String) {
        #expect(TokenRedaction(tokens: [Self.token]).isFound(in: value))
    }

    @Test(arguments: ["eyJ0+a/b=", "eyJ0 a/b=c", "eyJ0%2", "%65%79%4A%30%2B%61%2F%62%3D", "", "plain"])
    func aHeaderWithoutTheWholeTokenIsNot(value: String) {
        #expect(!TokenRedaction(tokens: [Self.token]).isFound(in: value))
    }

    @Test func whatIsReturned() {
        let fields = ProxyHeaders.returned(
            [
                (name: "Content-Type", value: "application/json"), (name: "Set-Cookie", value: "s=1"),
                (name: "Connection", value: "X-Hop"), (name: "X-Hop", value: "1"),
                (name: "TokenVault-Proxy", value: "forged"), (name: "Location", value: "/cb?t=eyJ0%2Ba%2Fb%3Dc"),
                (name: "X-Kept", value: "yes"),
            ], tokens: [Self.token], refreshed: false)
        #expect(fields.map { $0.name.canonicalName }.sorted() == ["content-type", "tokenvault-proxy", "x-kept"])
        #expect(fields[.init("TokenVault-Proxy")!] == "upstream")
    }

    /// After a refresh the call carried two tokens: an answer echoing either loses that header.
    @Test func bothTokensOfARefreshedCallAreSearchedFor() {
        let fields = ProxyHeaders.returned(
            [
                (name: "X-Old", value: "was eyJ0+a/b=c"), (name: "X-New", value: "now fresh-1"),
                (name: "X-Kept", value: "1"),
            ],
            tokens: [SecretBytes(Array("fresh-1".utf8)), Self.token], refreshed: true)
        #expect(fields.map { $0.name.canonicalName }.sorted() == ["tokenvault-proxy", "x-kept"])
        #expect(fields[.init("TokenVault-Proxy")!] == "upstream; refreshed")
    }
}
