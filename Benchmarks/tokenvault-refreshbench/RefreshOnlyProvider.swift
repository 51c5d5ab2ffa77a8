import TokenVaultCore

/// The benchmark's providers measure refreshes only: no revocation, no code exchange, no
/// client id. Conforming supplies `name` and `refresh`.
protocol RefreshOnlyProvider: TokenProvider {}

extension RefreshOnlyProvider {
    var supportsRevocation: Bool { false }

    func revoke(_ token: SecretBytes, hint: TokenHint, call: ProviderCall?) async throws(ProviderFailure) {}

    var clientID: String? { nil }

    func exchange(_ request: CodeExchangeRequest) async throws(ProviderFailure) -> TokenPayload {
        throw ProviderFailure(
            kind: .misconfigured, code: .init(rawValue: "not_supported"),
            message: "the benchmark does not exchange codes")
    }
}
