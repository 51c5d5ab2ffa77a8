import Testing
import TokenVaultCore

/// The pure rules of a sign-in: which redirect URIs are admitted, what the authorization URL
/// carries, and what a callback must look like to be read as one answer.
@Suite struct SignInRulesTests {
    static let registered = ["https://app.example/cb", "http://127.0.0.1/callback", "http://[::1]:9000/cb"]

    @Test(arguments: [
        "https://app.example/cb", "http://127.0.0.1/callback", "http://127.0.0.1:53124/callback",
        "http://[::1]:1/cb", "http://[::1]/cb",
    ])
    func admitted(_ uri: String) { #expect(RedirectURIRule.admits(uri, registered: Self.registered)) }

    @Test(arguments: [
        "https://app.example/cb/", "https://app.example/cb?x=1", "https://APP.example/cb", "http://app.example/cb",
        "http://127.0.0.1:53124/callback/x", "http://127.0.0.1:0/callback", "http://127.0.0.1:70000/callback",
        "http://localhost:53124/callback", "http://127.0.0.1.evil.example/callback", "http://127.0.0.1@evil/callback",
        "https://127.0.0.1:5000/callback", "",
    ])
    func refused(_ uri: String) { #expect(!RedirectURIRule.admits(uri, registered: Self.registered)) }

    @Test func theURLCarriesEveryParameterEscapedOnTopOfTheEndpointsOwnQuery() {
        let request = AuthorizationRequest(
            clientID: "app 1", redirectURI: "https://app.example/cb?x=1", scopes: ["openid", "email"], state: "s",
            codeChallenge: "c", nonce: "n", loginHint: "a+b@example.com", prompt: "consent",
            resources: ["https://api.example/", "https://b.example/"], extra: ["ui_locales": "ru en"])
        #expect(
            request.url(endpoint: "https://as.example/auth?tenant=t")
                == "https://as.example/auth?tenant=t&response_type=code&client_id=app+1"
                + "&redirect_uri=https%3A%2F%2Fapp.example%2Fcb%3Fx%3D1&scope=openid+email&state=s&code_challenge=c"
                + "&code_challenge_method=S256&nonce=n&login_hint=a%2Bb%40example.com&prompt=consent"
                + "&resource=https%3A%2F%2Fapi.example%2F&resource=https%3A%2F%2Fb.example%2F&ui_locales=ru+en")
        #expect(
            request.url(
                endpoint: "https://as.example/auth",
                pushed: PushedAuthorizationRequest(requestURI: "urn:x:1", expiresIn: 60))
                == "https://as.example/auth?client_id=app+1&request_uri=urn%3Ax%3A1")
        #expect(AuthorizationRequest.asksForIDToken(["openid"]) && !AuthorizationRequest.asksForIDToken(["email"]))
    }

    @Test func aCallbackURLIsReadFromItsQueryOrFragment() throws {
        let callback = try AuthorizationCallback.parse(
            url: "http://127.0.0.1:5000/cb?code=a%2Bb&state=xyz&iss=https%3A%2F%2Fas.example#ignored")
        #expect(callback.state.revealString() == "xyz" && callback.issuer == "https://as.example")
        guard case .code(let code) = callback.outcome else {
            Issue.record("no code")
            return
        }
        #expect(code.revealString() == "a+b")
        let fragment = try AuthorizationCallback.parse(url: "https://app.example/cb#state=s&error=access_denied")
        guard case .error(let error, let description) = fragment.outcome else {
            Issue.record("no error")
            return
        }
        #expect(error == "access_denied" && description == nil)
    }

    @Test(arguments: [
        "https://app.example/cb?code=a&state=1&state=2", "https://app.example/cb?code=a&code=b&state=1",
        "https://app.example/cb?code=a", "https://app.example/cb?state=1",
        "https://app.example/cb?state=1&code=a&error=x",
        "https://app.example/cb?state=1&code=a&iss=x&iss=y", "https://app.example/cb?state=%zz&code=a",
        "https://app.example/cb",
    ])
    func aCallbackThatIsNotOneAnswerIsRefused(_ url: String) {
        #expect {
            _ = try AuthorizationCallback.parse(url: url)
        } throws: { error in
            (error as? VaultError)?.code == .invalidCallback
        }
    }

    @Test func theServersErrorTextIsKeptToItsOwnCharacters() throws {
        let callback = try AuthorizationCallback.parse([
            ("state", "s"), ("error", "access_denied\u{1B}[31m"), ("error_description", "no \"thanks\"\n\\ok"),
        ])
        guard case .error(let error, let description) = callback.outcome else {
            Issue.record("no error")
            return
        }
        #expect(error == "access_denied[31m" && description == "no thanksok")
    }

    @Test func base64URLHasNoPaddingAndTheURLAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.encode(SecretBytes([0xFB, 0xFF])).revealString() == "-_8")
        for count in 0..<40 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            #expect(Base64URL.encode(SecretBytes(bytes)).revealString() == Base64URL.encode(bytes))
        }
    }
}
