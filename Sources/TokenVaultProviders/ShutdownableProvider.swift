import TokenVaultCore

/// A provider holding resources (an HTTP client and its connections) that must be released
/// before the process exits; `ProviderTable.shutdown` shuts these down.
public protocol ShutdownableProvider: TokenProvider {
    func shutdown() async throws
}
