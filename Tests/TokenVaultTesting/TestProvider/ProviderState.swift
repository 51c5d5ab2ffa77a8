import Foundation

/// Everything the test server knows, changed only under `ProviderCore`'s lock: the options, the
/// tokens, the scripted misbehaviours and the record of what clients sent. It turns one request
/// into one answer; the connection handler only moves bytes.
struct ProviderState {
    var options: TestOAuthServer.Options
    /// `http(s)://127.0.0.1:<port>`, once bound: the id_token issuer and the discovery document's base.
    var issuer = ""
    var ledger = TokenLedger()
    var tokenScript: [ScriptedResponse] = []
    var revocationScript: [ScriptedResponse] = []
    var counters = Counters()
    /// Token -> the thumbprint of the DPoP key it is bound to (`Options.dpop`).
    var dpopBindings: [String: String] = [:]

    struct Counters {
        var tokenRequests = 0
        var revocationRequests = 0
        var requests: [RecordedRequest] = []
        var presentations: [String: Int] = [:]
        var revokedFamilies = 0
        var successfulRefreshes = 0
        var successfulCodeExchanges = 0
    }

    enum Endpoint {
        case token, revocation, discovery, other
    }

    init(options: TestOAuthServer.Options) { self.options = options }

    /// The server's clock: the wall clock, moved by `clockOffset`.
    var now: Date { Date().addingTimeInterval(options.clockOffset) }

    func endpoint(for path: String) -> Endpoint {
        if path == options.tokenPath { return .token }
        if path == options.revocationPath { return .revocation }
        return options.discoveryPaths.contains(path) ? .discovery : .other
    }

    /// Records and counts the request, then answers it: from the endpoint's script if one is
    /// queued, normally otherwise.
    mutating func receive(_ request: RecordedRequest) -> ConnectionAction {
        counters.requests.append(request)
        let endpoint = endpoint(for: request.path)
        var step: ScriptedResponse?
        switch endpoint {
        case .token:
            counters.tokenRequests += 1
            if let presented = request.form["refresh_token"], !presented.isEmpty {
                counters.presentations[presented, default: 0] += 1
            }
            if !tokenScript.isEmpty {
                step = tokenScript.removeFirst()
            } else if let late = options.lateAnswers, request.form["grant_type"] == "refresh_token",
                Double.random(in: 0..<1) < late.share
            {
                return .replyLater(serve(request), seconds: late.seconds)
            } else if let range = options.tokenAnswerDelay {
                step = .delay(seconds: Double.random(in: range))
            }
        case .revocation:
            counters.revocationRequests += 1
            if !revocationScript.isEmpty { step = revocationScript.removeFirst() }
        case .discovery, .other:
            if options.unavailablePaths.contains(request.path) {
                step = .error(status: 503, code: "temporarily_unavailable")
            }
        }
        guard let step else {
            // Served first, then padded: `padded(serve(...))` would copy the whole state (every
            // recorded request) for the read while `serve` mutated it, on every request.
            let reply = serve(request)
            return .reply(padded(reply, endpoint))
        }
        switch step {
        case .error(let status, let code, let description, let retryAfter):
            return .reply(
                ErrorResponse.make(
                    options.errorShape, status: status, code: code, description: description, retryAfter: retryAfter))
        case .htmlError(let status):
            return .reply(ErrorResponse.html(status: status))
        case .delay(let seconds):
            return .delay(seconds: seconds)
        case .rotateThenDrop:
            _ = serve(request)
            return .drop
        case .malformedJSON(let rotating):
            if rotating { _ = serve(request) }
            return .reply(
                HTTPReply(
                    status: 200, headers: [("Content-Type", "application/json")],
                    body: Array(#"{"token_type":"Bearer","expires_in":3600,"access_token":"trunc"#.utf8)))
        case .compactJWTBody:
            let issuedAt = Int(now.timeIntervalSince1970)
            let jwt = UnsignedJWT.make([
                ("iss", .string(issuer)), ("sub", .string("scripted-jwt-body")), ("aud", .string(options.clientID)),
                ("iat", .integer(issuedAt)), ("exp", .integer(issuedAt + 600)),
            ])
            return .reply(HTTPReply(status: 200, headers: [("Content-Type", "application/jwt")], body: Array(jwt.utf8)))
        case .raw(let status, let headers, let body):
            return .reply(
                HTTPReply(status: status, headers: headers.sorted { $0.key < $1.key }, body: Array(body.utf8)))
        }
    }

    /// A token answer with `answerHeaderPadding` extra header fields (`X-Pad-1` …).
    func padded(_ reply: HTTPReply, _ endpoint: Endpoint) -> HTTPReply {
        guard endpoint == .token, options.answerHeaderPadding > 0 else { return reply }
        var padded = reply
        padded.headers += (1...options.answerHeaderPadding).map { ("X-Pad-\($0)", "p") }
        return padded
    }

    /// The normal answer, with its effect on the tokens.
    mutating func serve(_ request: RecordedRequest) -> HTTPReply {
        switch endpoint(for: request.path) {
        case .token: return tokenEndpoint(request)
        case .revocation: return revocationEndpoint(request)
        case .discovery: return discoveryDocument()
        case .other: return error(404, "not_found", "no such endpoint: \(request.path)")
        }
    }

    /// An error answer in the configured shape.
    func error(_ status: Int, _ code: String, _ description: String, headers: [(String, String)] = []) -> HTTPReply {
        ErrorResponse.make(
            options.errorShape, status: status, code: code, description: description, extraHeaders: headers)
    }
}
