import Testing
import TokenVaultCore

/// What the change feed carries of a sign-in's end to the other nodes, and what they read back.
@Suite struct SignInEndTests {
    @Test(arguments: [
        (SignInEnd.authorized, ""), (.failed(reason: "access_denied"), "access_denied"),
        (.failed(reason: "expired_token"), "expired_token"),
        // A notification's fields are split at `|`; a code left with nothing is still a failure.
        (.failed(reason: "a|b c"), "abc"), (.failed(reason: "|| ?"), "authorization_failed"),
        (.failed(reason: ""), "authorization_failed"),
        (.failed(reason: String(repeating: "x", count: 100)), String(repeating: "x", count: 64)),
    ])
    func theFeedCarriesACodeItCanSplit(ended: SignInEnd, code: String) {
        #expect(ended.feedCode == code)
        #expect(SignInEnd(feedCode: ended.feedCode).eventKind == ended.eventKind)
    }
}
