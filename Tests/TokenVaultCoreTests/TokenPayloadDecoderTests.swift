import Testing
import TokenVaultCore
import TokenVaultTesting

@Suite struct TokenPayloadDecoderTests {
    func decode(_ json: String) throws -> TokenPayload { try SamplePayloads.decode(json) }

    func decodeError(_ json: String) -> VaultError? {
        do {
            _ = try decode(json)
            return nil
        } catch {
            return error as? VaultError
        }
    }

    @Test func tinkoffSDKPayload() throws {
        let payload = try decode(
            #"{"accessToken":"a1","refreshToken":"r1","idToken":"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1LTEifQ.","expirationTimeout":1800}"#
        )
        #expect(payload.kind == .oauth2)
        #expect(payload.secrets.accessToken.revealString() == "a1")
        #expect(payload.secrets.refreshToken?.revealString() == "r1")
        #expect(payload.subject == "u-1")
        #expect(payload.expiry == .after(seconds: 1800))
        #expect(payload.secrets.extras == nil)
    }

    @Test func tinkoffWithoutOfflineAccessHasNoRefreshToken() throws {
        for refresh in ["", #","refreshToken":null"#, #","refreshToken":"""#] {
            let payload = try decode(#"{"accessToken":"a1","expirationTimeout":1800\#(refresh)}"#)
            #expect(payload.secrets.refreshToken == nil)
        }
    }

    @Test func rfc6749Response() throws {
        let payload = try decode(
            #"{"access_token":"a","token_type":"bearer","expires_in":3600,"refresh_token":"r","scope":"openid profile","x":1}"#
        )
        #expect(payload.tokenType == "Bearer")
        #expect(payload.scopes == ["openid", "profile"])
        #expect(payload.secrets.extras?.revealString() == #"{"x":1}"#)
    }

    @Test func scopeAsArrayAndMissingTokenType() throws {
        let payload = try decode(#"{"access_token":"a","scope":["openid","email"]}"#)
        #expect(payload.scopes == ["openid", "email"])
        #expect(payload.tokenType == nil)
        #expect(payload.expiry == .unknown)
    }

    @Test(arguments: [
        ("3600", TokenPayload.Expiry.after(seconds: 3600)), ("\"3600\"", .after(seconds: 3600)),
        ("\" 120 \"", .after(seconds: 120)), ("3599.9", .after(seconds: 3599)), ("0", .unknown), ("\"0\"", .unknown),
        ("null", .unknown), ("2147483647", .after(seconds: 2_147_483_647)), ("0.4", .unknown),
    ])
    func expiresInBoundaries(_ raw: String, _ expected: TokenPayload.Expiry) throws {
        #expect(try decode(#"{"access_token":"a","expires_in":\#(raw)}"#).expiry == expected)
    }

    @Test(arguments: [
        ("-1", "must not be negative"), ("-0.5", "must not be negative"), ("\"-30\"", "must not be negative"),
        ("1e20", "more than 100 years"), ("9223372036854775807", "more than 100 years"),
        ("\"soon\"", "non-numeric"), ("\"\"", "non-numeric"), ("true", "got a boolean"), ("[1]", "got an array"),
    ])
    func badExpiresInIsRejectedNamingTheField(_ raw: String, _ reason: String) {
        let error = decodeError(#"{"access_token":"a","expires_in":\#(raw)}"#)
        #expect(error?.code == .invalidField)
        #expect(error?.detail.contains("expires_in") == true)
        #expect(error?.detail.contains(reason) == true, "\(String(describing: error))")
    }

    @Test func absoluteExpiresAt() throws {
        #expect(
            try decode(#"{"access_token":"a","expires_at":1795000000}"#).expiry
                == .at(Timestamp(seconds: 1_795_000_000)))
        #expect(
            try decode(#"{"access_token":"a","expires_at":"2026-11-22T10:00:00Z"}"#).expiry
                == .at(Timestamp(seconds: 1_795_341_600)))
        #expect(decodeError(#"{"access_token":"a","expires_at":"tomorrow"}"#)?.detail.contains("expires_at") == true)
        #expect(decodeError(#"{"access_token":"a","expires_at":-5}"#)?.code == .invalidField)
    }

    @Test func ebsVerifyToken() throws {
        let relative = try decode(#"{"verify_token":"v","expired":"600"}"#)
        #expect(relative.kind == .verifyToken)
        #expect(relative.expiry == .after(seconds: 600))
        #expect(
            try decode(#"{"verify_token":"v","expired":1795000000}"#).expiry == .at(Timestamp(seconds: 1_795_000_000)))
        #expect(
            try decode(#"{"verify_token":"v","expired":1795000000123}"#).expiry
                == .at(Timestamp(milliseconds: 1_795_000_000_123)))
        #expect(
            decodeError(#"{"verify_token":"v","refresh_token":"r"}"#)?.detail.contains("cannot be refreshed") == true)
    }

    @Test(arguments: [
        ("[]", "expected a JSON object"), ("{", "not valid JSON"), ("{}", "access_token"),
        (#"{"access_token":""}"#, "access_token"), (#"{"access_token":5}"#, "expected a string, got a number"),
        (#"{"access_token":"a","verify_token":"v"}"#, "not both"), (#"{"access_token":"a","scope":5}"#, "scope"),
        (#"{"access_token":"a","scope":["x",1]}"#, "array items"),
        (#"{"access_token":"a","token_type":7}"#, "token_type"),
    ])
    func malformedPayloads(_ json: String, _ reason: String) {
        let error = decodeError(json)
        #expect(error != nil)
        #expect(error?.detail.contains(reason) == true, "\(String(describing: error))")
    }

    @Test func errorsNeverEchoTokenValues() {
        let cases = [
            #"{"access_token":"SECRET-A","expires_in":"SECRET-B"}"#,
            #"{"access_token":"SECRET-A","refresh_token":["SECRET-B"]}"#,
            #"{"access_token":"SECRET-A","verify_token":"SECRET-B"}"#,
            #"{"access_token":"SECRET-A","scope":{"SECRET-B":1}}"#,
            #"{"access_token":"SECRET-A""#,
        ]
        for json in cases {
            let error = decodeError(json)
            #expect(error != nil)
            #expect(!(error?.description.contains("SECRET") ?? true), "\(String(describing: error))")
        }
    }
}
