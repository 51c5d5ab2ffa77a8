import Testing

@testable import TokenVaultServer

/// One `min_ttl` parser serves the router and the fast path: both accept exactly these texts.
@Suite struct MinimumTTLTests {
    @Test(arguments: [("0", 0.0), ("60", 60), ("2.5", 2.5), ("86400", 86_400), (".5", 0.5), ("7.", 7)])
    func plainDecimalsAreAccepted(text: String, seconds: Double) {
        #expect(MinimumTTL.parse(Array(text.utf8)) == seconds)
        #expect(TokenReadTarget("/v1/credentials/a/b/token?min_ttl=\(text)")?.minimumTTL == seconds)
    }

    @Test(arguments: [
        "", "-1", "+5", "1e3", "0x10", "inf", "nan", "86400.5", "1.2.3", " 5", "5 ", "99999999999999999999999",
    ])
    func anythingElseIsRefused(text: String) {
        #expect(MinimumTTL.parse(Array(text.utf8)) == nil)
        // The fast path does not recognise it, so the router answers it with its 400.
        #expect(TokenReadTarget("/v1/credentials/a/b/token?min_ttl=\(text)") == nil)
    }
}
