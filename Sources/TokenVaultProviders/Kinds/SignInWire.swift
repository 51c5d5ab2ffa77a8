import TokenVaultCore

/// A kind whose instances can start sign-ins: it knows its authorization server and pushes
/// authorization requests. `KindProvider` over such a wire is a `SignInProvider`.
public protocol SignInWire: ProviderWire {
    func authorizationServer(over http: ProviderHTTPClient) async throws(ProviderFailure) -> AuthorizationServer
    func pushAuthorizationRequest(_ parameters: [(name: String, value: String)], over http: ProviderHTTPClient)
        async throws(ProviderFailure) -> PushedAuthorizationRequest
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
}
