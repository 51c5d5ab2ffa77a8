import TokenVaultCore

/// A kind whose instances can start sign-ins: it knows its authorization server and pushes
/// authorization requests. `KindProvider` over such a wire is a `SignInProvider`.
public protocol SignInWire: ProviderWire {
    func authorizationServer(over http: ProviderHTTPClient) async throws(ProviderFailure) -> AuthorizationServer
    func pushAuthorizationRequest(_ parameters: [(name: String, value: String)], over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> PushedAuthorizationRequest
    func requestDeviceAuthorization(scopes: [String], extra: [String: String], over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> DeviceAuthorization
}

extension SignInWire {
    /// Kinds without a device authorization endpoint.
    public func requestDeviceAuthorization(scopes: [String], extra: [String: String], over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> DeviceAuthorization
    {
        throw ProviderFailure(
            kind: .misconfigured, code: .providerNotConfigured,
            message: "kind \(Self.kind) has no device authorization endpoint (RFC 8628)")
    }
}

extension KindProvider: SignInProvider where Wire: SignInWire {
    public func authorizationServer() async throws(ProviderFailure) -> AuthorizationServer {
        do throws(ProviderFailure) {
            return try await wire.authorizationServer(over: http)
        } catch {
            http.log(error, operation: "authorization server", credential: nil)
            throw error
        }
    }

    public func pushAuthorizationRequest(_ parameters: [(name: String, value: String)]) async throws(ProviderFailure)
        -> PushedAuthorizationRequest
    {
        do throws(ProviderFailure) {
            return try await wire.pushAuthorizationRequest(parameters, over: http)
        } catch {
            http.log(error, operation: "pushed authorization request", credential: nil)
            throw error
        }
    }

    public func requestDeviceAuthorization(scopes: [String], extra: [String: String]) async throws(ProviderFailure)
        -> DeviceAuthorization
    {
        do throws(ProviderFailure) {
            return try await wire.requestDeviceAuthorization(scopes: scopes, extra: extra, over: http)
        } catch {
            http.log(error, operation: "device authorization", credential: nil)
            throw error
        }
    }
}
