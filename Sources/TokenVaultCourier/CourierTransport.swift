import TokenVaultCore
import TokenVaultProviders

/// A provider instance's requests, sent through the courier on the route made for it.
struct CourierTransport: ProviderTransport {
    let client: CourierClient
    let instance: String
    let route: UInt32

    func send(_ request: PreparedRequest, call: ProviderCall?) async throws(ProviderFailure) -> HTTPAnswer {
        try await client.send(route: route, instance: instance, request: request, call: call)
    }

    /// The provider object is gone (a reload replaced it): the courier retires its route. The
    /// courier itself is the client's to stop.
    func shutdown() async throws { await client.retire(route) }
}
