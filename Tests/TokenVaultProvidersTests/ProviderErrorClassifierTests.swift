import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing
import TokenVaultCore

@testable import TokenVaultProviders

#if canImport(Glibc)
    import Glibc
#endif

/// Every row of providers.md's error classes, each body shape, and the rules for
/// `Retry-After`, messages and transport errors.
@Suite struct ProviderErrorClassifierTests {
    /// 2026-01-01T00:00:00Z.
    static let now = Date(timeIntervalSince1970: 1_767_225_600)

    func classify(_ status: Int, _ body: String, headers: [String: String] = [:]) -> ProviderFailure {
        ProviderErrorClassifier.classify(status: status, headers: headers, body: Array(body.utf8), now: Self.now)
    }

    // MARK: RFC 6749 codes

    @Test func invalidGrantNeedsReauthorisation() {
        let failure = classify(400, #"{"error":"invalid_grant","error_description":"Refresh token expired"}"#)
        #expect(failure.kind == .invalidGrant)
        #expect(failure.code == "invalid_grant")
        #expect(failure.message == "Refresh token expired")
        #expect(failure.httpStatus == 400)
        #expect(failure.retryAfter == nil)
    }

    @Test(arguments: [
        ("invalid_client", 401), ("unauthorized_client", 400), ("unsupported_grant_type", 400),
        ("invalid_request", 400), ("invalid_scope", 400),
    ])
    func clientAndRequestErrorsAreMisconfiguration(code: String, status: Int) {
        let failure = classify(status, #"{"error":"\#(code)"}"#)
        #expect(failure.kind == .misconfigured)
        #expect(failure.code.rawValue == code)
        #expect(failure.httpStatus == status)
        #expect(failure.message.contains(code))
    }

    @Test(arguments: [("server_error", 500), ("temporarily_unavailable", 503), ("server_error", 400)])
    func serverErrorsAreTransient(code: String, status: Int) {
        let failure = classify(status, #"{"error":"\#(code)","error_description":"try later"}"#)
        #expect(failure.kind == .transient)
        #expect(failure.code.rawValue == code)
    }

    @Test func providerCodeWinsOverStatusAndIsMatchedWithoutCase() {
        #expect(classify(503, #"{"error":"INVALID_GRANT"}"#).kind == .invalidGrant)
        #expect(classify(200, #"{"error":"invalid_client"}"#).kind == .misconfigured)
    }

    @Test func unknownCodeFallsBackToStatus() {
        let refused = classify(400, #"{"error":"weird_thing","error_description":"?"}"#)
        #expect(refused.kind == .misconfigured)
        #expect(refused.code == "weird_thing")
        let overloaded = classify(503, #"{"error":"weird_thing"}"#)
        #expect(overloaded.kind == .transient)
    }

    @Test func oddErrorCodesAreReplacedByTheStatus() {
        let long = String(repeating: "x", count: 65)
        #expect(classify(400, #"{"error":"\#(long)"}"#).code == "http_400")
        #expect(classify(400, #"{"error":"two words"}"#).code == "http_400")
        #expect(classify(400, #"{"error":"bad\nline"}"#).code == "http_400")
    }

    // MARK: Status only

    @Test(arguments: [500, 502, 503, 504, 429, 408])
    func retryableStatusesAreTransient(status: Int) {
        let failure = classify(status, "")
        #expect(failure.kind == .transient)
        #expect(failure.code.rawValue == "http_\(status)")
        #expect(failure.httpStatus == status)
    }

    @Test(arguments: [400, 401, 403, 404, 405, 302])
    func otherRefusalsAreMisconfiguration(status: Int) {
        let failure = classify(status, "<html><body>Nope</body></html>", headers: ["content-type": "text/html"])
        #expect(failure.kind == .misconfigured)
        #expect(failure.code.rawValue == "http_\(status)")
    }

    @Test func htmlErrorPageIsClassifiedByStatusAndNeverQuoted() {
        let page =
            "<html><body><h1>500 Internal Server Error</h1><pre>refresh_token=rt-echoed-secret</pre></body></html>"
        let failure = classify(500, page, headers: ["content-type": "text/html; charset=utf-8"])
        #expect(failure.kind == .transient)
        #expect(failure.code == "http_500")
        #expect(failure.message.contains("text/html"))
        #expect(!failure.message.contains("rt-echoed-secret"))
        #expect(!failure.message.contains("<html>"))
    }

    @Test func truncatedJSONIsUnreadable() {
        let failure = classify(502, #"{"error":"server_err"#)
        #expect(failure.kind == .transient)
        #expect(failure.code == "http_502")
    }

    @Test func jsonWithoutErrorFieldUsesStatusAndMessage() {
        let failure = classify(503, #"{"message":"maintenance window"}"#)
        #expect(failure.kind == .transient)
        #expect(failure.code == "http_503")
        #expect(failure.message == "maintenance window")
    }

    // MARK: T-ID

    @Test func tinkoffShapeReadsErrorMessage() {
        let failure = classify(400, #"{"error":"invalid_grant","error_message":"Token is revoked"}"#)
        #expect(failure.kind == .invalidGrant)
        #expect(failure.message == "Token is revoked")
    }

    @Test func limitExceededBacksOffAtLeastFifteenMinutes() {
        let plain = classify(400, #"{"error":"limit_exceeded","error_message":"Too many tokens"}"#)
        #expect(plain.kind == .transient)
        #expect(plain.code == "limit_exceeded")
        #expect(plain.retryAfter == 900)
        #expect(plain.message == "Too many tokens")

        let shortHint = classify(429, #"{"error":"limit_exceeded"}"#, headers: ["retry-after": "60"])
        #expect(shortHint.retryAfter == 900)
        let longHint = classify(429, #"{"error":"limit_exceeded"}"#, headers: ["retry-after": "3600"])
        #expect(longHint.retryAfter == 3600)
    }

    // MARK: Sber API gateway

    @Test(arguments: [
        ("401", 401, ProviderFailure.Kind.misconfigured), ("403", 403, .misconfigured), ("429", 429, .transient),
        ("500", 500, .transient), ("503", 503, .transient), ("400", 400, .misconfigured),
    ])
    func sberGatewayIsClassifiedByHTTPCode(httpCode: String, status: Int, kind: ProviderFailure.Kind) {
        let body = #"{"httpCode":"\#(httpCode)","httpMessage":"Gateway says no","moreInformation":"details"}"#
        let failure = classify(status, body)
        #expect(failure.kind == kind)
        #expect(failure.code.rawValue == "http_\(httpCode)")
        #expect(failure.message == "Gateway says no: details")
        #expect(failure.httpStatus == status)
    }

    @Test func sberGatewayInvalidGrant() {
        let body = #"{"httpCode":"400","httpMessage":"Bad Request","moreInformation":"invalid_grant: token expired"}"#
        let failure = classify(400, body)
        #expect(failure.kind == .invalidGrant)
        #expect(failure.code == "invalid_grant")
    }

    @Test func sberGatewayHTTPCodeMayBeANumberAndDifferFromTheStatus() {
        let failure = classify(500, #"{"httpCode":401,"httpMessage":"Unauthorized"}"#)
        #expect(failure.kind == .misconfigured)
        #expect(failure.code == "http_401")
        #expect(failure.httpStatus == 500)
    }

    // MARK: ESIA

    @Test(arguments: [
        ("ESIA-007011", ProviderFailure.Kind.invalidGrant), ("ESIA-007007", .transient), ("ESIA-007008", .transient),
        ("ESIA-007015", .misconfigured), ("ESIA-007053", .misconfigured),
    ])
    func esiaNumberedErrors(code: String, kind: ProviderFailure.Kind) {
        let failure = classify(400, #"{"error":"invalid_request","error_description":"\#(code): something"}"#)
        #expect(failure.kind == kind)
        #expect(failure.code.rawValue == code)
    }

    @Test func esiaClockSkewAndSignatureAreNamed() {
        let skew = classify(400, #"{"error":"invalid_request","error_description":"ESIA-007015: bad timestamp"}"#)
        #expect(skew.message.contains("clock skew"))
        let signature = classify(400, #"{"error":"invalid_client","error_description":"ESIA-007053: x"}"#)
        #expect(signature.message.contains("bad signature"))
    }

    @Test func unknownESIANumberFallsBackToErrorField() {
        let failure = classify(400, #"{"error":"invalid_grant","error_description":"ESIA-007099: ?"}"#)
        #expect(failure.kind == .invalidGrant)
        #expect(failure.code == "ESIA-007099")
        #expect(classify(502, #"{"error_description":"ESIA-007099: ?"}"#).kind == .transient)
    }

    // MARK: Retry-After

    @Test func retryAfterDeltaSeconds() {
        #expect(classify(503, "", headers: ["retry-after": "120"]).retryAfter == 120)
        #expect(classify(503, "", headers: ["retry-after": " 7 "]).retryAfter == 7)
        #expect(classify(503, "", headers: ["retry-after": "0"]).retryAfter == 0)
        #expect(classify(503, "", headers: ["retry-after": "-5"]).retryAfter == 0)
        #expect(classify(429, "", headers: ["Retry-After": "30"]).retryAfter == 30)
    }

    @Test(arguments: [
        "Thu, 01 Jan 2026 00:02:00 GMT",  // IMF-fixdate
        "Thursday, 01-Jan-26 00:02:00 GMT",  // RFC 850
        "Thu Jan  1 00:02:00 2026",  // asctime
    ])
    func retryAfterHTTPDateForms(date: String) {
        #expect(classify(503, "", headers: ["retry-after": date]).retryAfter == 120)
    }

    @Test func retryAfterDateInThePastIsZero() {
        #expect(classify(503, "", headers: ["retry-after": "Sun, 06 Nov 1994 08:49:37 GMT"]).retryAfter == 0)
    }

    @Test(arguments: ["soon", "12abc", "", "Thu, 32 Jan 2026 00:02:00 GMT", "1e3", "Thu, 01 Jan 2026 00:02:00 PST"])
    func garbageRetryAfterIsIgnored(value: String) {
        let failure = classify(503, "", headers: ["retry-after": value])
        #expect(failure.retryAfter == nil)
        #expect(failure.kind == .transient)
    }

    @Test func httpDateParserKnowsTheRFCExample() {
        let expected = 784_111_777.0
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT", referenceYear: 2026) == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT", referenceYear: 2026) == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994", referenceYear: 2026) == expected)
        #expect(HTTPDate.parse("Sun, 29 Feb 2024 00:00:00 GMT", referenceYear: 2026) == 1_709_164_800)
        #expect(HTTPDate.parse("Sun, 29 Feb 2023 00:00:00 GMT", referenceYear: 2026) == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 24:00:00 GMT", referenceYear: 2026) == nil)
        #expect(HTTPDate.parse("Sun, 6 Nov 1994 08:49:37 GMT", referenceYear: 2026) == nil)
        // RFC 850 two-digit years more than 50 years ahead belong to the past century.
        #expect(HTTPDate.parse("Monday, 01-Jan-80 00:00:00 GMT", referenceYear: 2026) == 315_532_800)
    }

    // MARK: Messages

    @Test func messagesNeverEchoRequestSecrets() {
        let refreshToken = SecretBytes(utf8: "rt-family-secret")
        let clientSecret = SecretBytes(utf8: "vault secret/with+specials")
        let body =
            #"{"error":"invalid_grant","error_description":"token rt-family-secret for vault secret/with+specials "#
            + #"(vault+secret%2Fwith%2Bspecials) is unknown"}"#
        let failure = ProviderErrorClassifier.classify(
            status: 400, headers: [:], body: Array(body.utf8), now: Self.now, redacting: [refreshToken, clientSecret])
        #expect(failure.kind == .invalidGrant)
        #expect(!failure.message.contains("rt-family-secret"))
        #expect(!failure.message.contains("secret/with"))
        #expect(!failure.message.contains("secret%2Fwith"))
        #expect(failure.message.contains("<redacted>"))
        #expect(!failure.description.contains("rt-family-secret"))
    }

    @Test func tokenShapedTextIsRemovedEvenWhenUnknown() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJlMTIz"
        let failure = classify(400, #"{"error":"invalid_grant","error_description":"token \#(jwt) expired"}"#)
        #expect(!failure.message.contains("eyJ"))
        #expect(failure.message == "token <redacted> expired")
        // Ordinary words and URLs without digits stay readable.
        let plain = classify(
            400, #"{"error":"invalid_grant","error_description":"see docs.example.com/errors/grants"}"#)
        #expect(plain.message == "see docs.example.com/errors/grants")
    }

    @Test func messagesAreOneShortLine() {
        let long = String(repeating: "abc ", count: 100)
        let failure = classify(400, #"{"error":"invalid_request","error_description":"line1\nline2\t\#(long)"}"#)
        #expect(failure.message.count <= 200)
        #expect(!failure.message.contains("\n"))
        #expect(failure.message.hasPrefix("line1 line2"))
        #expect(failure.message.hasSuffix("…"))
    }

    // MARK: 2xx bodies

    @Test func usableTokenResponseIsRead() throws {
        let body = #"{"access_token":"at-1","refresh_token":"rt-2","expires_in":"3600","scope":["a","b"]}"#
        let payload = try TokenResponseReader.read(status: 200, headers: [:], body: Array(body.utf8), now: Self.now)
        #expect(payload.secrets.accessToken.revealString() == "at-1")
        #expect(payload.secrets.refreshToken?.revealString() == "rt-2")
        #expect(payload.expiry == .after(seconds: 3600))
        #expect(payload.scopes == ["a", "b"])
    }

    @Test(arguments: [
        #"{"access_token":"at-1""#,  // truncated JSON
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln",  // compact JWT
        #"{"token_type":"Bearer","expires_in":3600}"#,  // no access_token
        #"["access_token"]"#,  // not an object
        "",  // empty
        #"{"access_token":"at-secret-value","expires_in":-1}"#,  // a field out of range
        "OK",
    ])
    func unusableTwoHundredIsUnknownOutcome(body: String) {
        let result = Result { () throws(ProviderFailure) in
            try TokenResponseReader.read(status: 200, headers: [:], body: Array(body.utf8), now: Self.now)
        }
        guard case .failure(let failure) = result else {
            Issue.record("a token was read from \(body)")
            return
        }
        #expect(failure.kind == .unknownOutcome)
        #expect(failure.code == "malformed_response")
        #expect(failure.httpStatus == 200)
        #expect(!failure.message.contains("at-secret-value"))
    }

    @Test func twoHundredWithErrorBodyIsClassified() {
        let result = Result { () throws(ProviderFailure) in
            try TokenResponseReader.read(
                status: 200, headers: [:], body: Array(#"{"error":"invalid_grant"}"#.utf8), now: Self.now)
        }
        guard case .failure(let failure) = result else {
            Issue.record("an error body was read as a token")
            return
        }
        #expect(failure.kind == .invalidGrant)
        #expect(failure.httpStatus == 200)
    }

    // MARK: Transport

    @Test func connectionFailuresBeforeSendingAreTransient() {
        let refused = ProviderErrorClassifier.transport(
            IOError(errnoCode: ECONNREFUSED, reason: "connect"), requestSent: false)
        #expect(refused.kind == .transient)
        #expect(refused.code == "connection_failed")
        #expect(refused.httpStatus == nil)
        // Errors that can only happen while connecting stay transient whatever the caller says.
        for error: any Error in [
            HTTPClientError.connectTimeout, HTTPClientError.getConnectionFromPoolTimeout,
            IOError(errnoCode: ECONNREFUSED, reason: "connect"), ChannelError.connectTimeout(.seconds(1)),
        ] {
            let failure = ProviderErrorClassifier.transport(error, requestSent: true)
            #expect(failure.kind == .transient, "\(error)")
            #expect(failure.code == "connection_failed", "\(error)")
        }
    }

    @Test func tlsFailuresAreTransientTLSErrors() {
        for error: any Error in [
            HTTPClientError.tlsHandshakeTimeout, NIOSSLError.handshakeFailed(.sslError([])),
        ] {
            let failure = ProviderErrorClassifier.transport(error, requestSent: true)
            #expect(failure.kind == .transient, "\(error)")
            #expect(failure.code == "tls_error", "\(error)")
        }
    }

    @Test func noAnswerAfterSendingIsUnknownOutcome() {
        let cases: [(any Error, String)] = [
            (HTTPClientError.readTimeout, "timeout"), (HTTPClientError.writeTimeout, "timeout"),
            (HTTPClientError.deadlineExceeded, "timeout"),
            (HTTPClientError.remoteConnectionClosed, "connection_dropped"),
            (ChannelError.eof, "connection_dropped"),
            (IOError(errnoCode: ECONNRESET, reason: "read"), "connection_dropped"),
            (NIOSSLError.uncleanShutdown, "connection_dropped"), (HTTPParserError.invalidStatus, "malformed_response"),
            (HTTPClientError.cancelled, "cancelled"), (CancellationError(), "cancelled"),
            (SomeOtherError(), "transport_error"),
        ]
        for (error, code) in cases {
            let failure = ProviderErrorClassifier.transport(error, requestSent: true)
            #expect(failure.kind == .unknownOutcome, "\(error)")
            #expect(failure.code.rawValue == code, "\(error)")
        }
    }

    @Test func anythingBeforeSendingIsTransient() {
        let failure = ProviderErrorClassifier.transport(HTTPClientError.readTimeout, requestSent: false)
        #expect(failure.kind == .transient)
        #expect(failure.code == "connection_failed")
    }

    struct SomeOtherError: Error {}
}
