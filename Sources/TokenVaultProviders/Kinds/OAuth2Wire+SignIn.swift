import Foundation
import NIOHTTP1
import TokenVaultCore

/// Sign-ins at an `oauth2` instance: the authorization server from the configuration or the
/// discovery document, and RFC 9126 pushed requests, authenticated as the token requests are.
extension OAuth2Wire: SignInWire {
    public func authorizationServer(over http: ProviderHTTPClient) async throws(ProviderFailure)
        -> AuthorizationServer
    {
        let endpoints = try await resolveEndpoints(over: http)
        if let problem = endpoints.signInProblem {
            throw ProviderFailure(kind: .misconfigured, code: .providerNotConfigured, message: problem)
        }
        guard let authorization = endpoints.authorization else {
            throw ProviderFailure(
                kind: .misconfigured, code: .providerNotConfigured,
                message: "provider '\(configuration.providerName)' has no authorization_endpoint (configured or "
                    + "discovered): it cannot start sign-ins")
        }
        guard !configuration.redirectURIs.isEmpty else {
            throw ProviderFailure(
                kind: .misconfigured, code: .providerNotConfigured,
                message: "provider '\(configuration.providerName)' has no redirect_uris: it cannot start sign-ins")
        }
        return AuthorizationServer(
            authorizationEndpoint: authorization, pushedAuthorizationRequestEndpoint: endpoints.pushedAuthorization,
            issuer: configuration.issuer ?? endpoints.issuer, sendsIssuer: endpoints.sendsIssuer,
            clientID: configuration.clientID, redirectURIs: configuration.redirectURIs,
            extraParameters: configuration.authorizationParameters)
    }

    /// RFC 9126 section 2: the parameters as a form, with the client's authentication; the
    /// answer is 201 with `request_uri` and `expires_in`. Nothing secret is sent (the PKCE
    /// challenge, not the verifier), and pushing again is harmless, so every failure is transient
    /// or the server's refusal.
    public func pushAuthorizationRequest(_ parameters: [(name: String, value: String)], over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> PushedAuthorizationRequest
    {
        guard let endpoint = try await resolveEndpoints(over: http).pushedAuthorization else {
            throw ProviderFailure(
                kind: .misconfigured, code: .providerNotConfigured,
                message: "provider '\(configuration.providerName)' has no pushed_authorization_request_endpoint")
        }
        var form = FormBody()
        for (name, value) in parameters where name != "client_id" { form.append(name, value) }
        // Client authentication adds `client_id` to the form, but for HTTP Basic (RFC 9126 section 2.1).
        if configuration.clientAuthentication == .clientSecretBasic { form.append("client_id", configuration.clientID) }
        let fields = try await authenticatedPost(form, to: endpoint, over: http, what: "pushed authorization request")
        guard case .string(let requestURI)? = fields["request_uri"], !requestURI.isEmpty else {
            throw ProviderFailure(
                kind: .transient, code: .malformedResponse,
                message: "the pushed authorization request endpoint answered without a request_uri")
        }
        // RFC 9126 section 2.2: a positive lifetime; anything else is read as its usual minute.
        var expiresIn: Double
        switch fields["expires_in"] {
        case .integer(let seconds)?: expiresIn = Double(seconds)
        case .number(let seconds)?: expiresIn = seconds
        default: expiresIn = 60
        }
        if !(expiresIn > 0) { expiresIn = 60 }
        return PushedAuthorizationRequest(requestURI: requestURI, expiresIn: expiresIn)
    }

    /// RFC 8628 section 3.1: `client_id` and `scope` (and the extra parameters the instance
    /// allows) as a form, with the client's authentication. Nothing is spent by asking, so every
    /// failure is transient or the server's refusal.
    public func requestDeviceAuthorization(scopes: [String], extra: [String: String], over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> DeviceAuthorization
    {
        let endpoints = try await resolveEndpoints(over: http)
        if let problem = endpoints.signInProblem {
            throw ProviderFailure(kind: .misconfigured, code: .providerNotConfigured, message: problem)
        }
        guard let endpoint = endpoints.deviceAuthorization else {
            throw ProviderFailure(
                kind: .misconfigured, code: .providerNotConfigured,
                message: "provider '\(configuration.providerName)' has no device_authorization_endpoint (configured or "
                    + "discovered): it cannot start device sign-ins")
        }
        for name in extra.keys where !configuration.authorizationParameters.contains(name) {
            throw ProviderFailure(
                kind: .misconfigured, code: .providerNotConfigured,
                message:
                    "\(name) is not one of the authorization_parameters of provider '\(configuration.providerName)'")
        }
        var form = FormBody()
        if !scopes.isEmpty { form.append("scope", scopes.joined(separator: " ")) }
        for name in extra.keys.sorted() { form.append(name, extra[name]!) }
        if configuration.clientAuthentication == .clientSecretBasic { form.append("client_id", configuration.clientID) }
        let fields = try await authenticatedPost(form, to: endpoint, over: http, what: "device authorization")
        guard case .string(let deviceCode)? = fields["device_code"], !deviceCode.isEmpty,
            case .string(let userCode)? = fields["user_code"], !userCode.isEmpty, userCode.utf8.count <= 256,
            case .string(let verificationURI)? = fields["verification_uri"] ?? fields["verification_url"],
            Self.isWebURL(verificationURI)
        else {
            throw ProviderFailure(
                kind: .transient, code: .malformedResponse,
                message: "the device authorization endpoint answered without device_code, user_code or an http(s) "
                    + "verification_uri")
        }
        var complete: String?
        if case .string(let text)? = fields["verification_uri_complete"], Self.isWebURL(text) { complete = text }
        return DeviceAuthorization(
            deviceCode: SecretBytes(utf8: deviceCode),
            userCode: DeviceUserCode(
                userCode: userCode, verificationURI: verificationURI, verificationURIComplete: complete,
                // Section 3.2: 5 seconds when absent; a server's zero or less would poll in a loop.
                interval: max(1, min(Self.seconds(fields["interval"]) ?? 5, 3600))),
            expiresIn: Double(Self.seconds(fields["expires_in"]) ?? 600),
            issuer: configuration.issuer ?? endpoints.issuer)
    }

    /// `form` with the client's authentication to a sign-in endpoint (pushed requests, device
    /// authorization), whose 2xx answer is a JSON object. Asking spends nothing, so a lost answer
    /// is merely transient.
    private func authenticatedPost(
        _ form: FormBody, to endpoint: String, over http: ProviderHTTPClient, what: String
    ) async throws(ProviderFailure) -> [String: JSONValue] {
        var form = form
        var headers = HTTPHeaders()
        let assertion = try authenticate(&headers, &form, endpoints: try await resolveEndpoints(over: http))
        let answer: HTTPAnswer
        do throws(ProviderFailure) {
            answer = try await http.post(endpoint, form: form, headers: headers, call: nil)
        } catch {
            var failure = error
            if failure.kind == .unknownOutcome { failure.kind = .transient }
            throw failure
        }
        guard (200..<300).contains(answer.status) else {
            throw ProviderErrorClassifier.classify(
                status: answer.status, headers: answer.headers, body: answer.body, now: Date(),
                redacting: (configuration.clientSecret.map { [$0] } ?? []) + (assertion.map { [$0] } ?? []))
        }
        guard !answer.bodyTooLarge,
            case .object(let fields)? = try? JSONDecoder().decode(JSONValue.self, from: Data(answer.body))
        else {
            throw ProviderFailure(
                kind: .transient, code: .malformedResponse, message: "the \(what) endpoint answered no JSON object")
        }
        return fields
    }

    private static func seconds(_ value: JSONValue?) -> Int? {
        switch value {
        case .integer(let seconds)?: Int(exactly: seconds)
        case .number(let seconds)?: seconds.isFinite && abs(seconds) < 1e9 ? Int(seconds.rounded(.up)) : nil
        default: nil
        }
    }

    /// A page a person can be sent to: http or https, at most 2 KiB (it is shown to them).
    private static func isWebURL(_ text: String) -> Bool {
        guard text.utf8.count <= 2048, let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            return false
        }
        return (scheme == "https" || scheme == "http") && url.host != nil
    }
}
