import Foundation
import Logging
import NIOHTTP1
import TokenVaultCore

/// The HTTP side every provider kind shares, so request rules and error classification are
/// written once: a kind only says where to POST, which headers and form fields to send and
/// how to check the answer (`ProviderHTTPClient+Token.swift`). The request leaves through the
/// instance's `ProviderTransport` (the courier in the daemon).
public final class ProviderHTTPClient: Sendable {
    let providerName: String
    let transport: any ProviderTransport
    let logger: Logger
    private let clockCheck = ProviderClockCheck()

    init(providerName: String, transport: any ProviderTransport, logger: Logger) {
        self.providerName = providerName
        self.transport = transport
        self.logger = logger
    }

    /// Closes the transport. Safe to call more than once.
    func shutdown() async throws { try await transport.shutdown() }

    /// POSTs a form (RFC 6749 and RFC 7009 requests are forms). `headers` come after the
    /// standard ones and replace them by name.
    func post(_ url: String, form: FormBody, headers: HTTPHeaders, call: ProviderCall?) async throws(ProviderFailure)
        -> HTTPAnswer
    {
        var all = Self.standardHeaders
        for (name, value) in headers { all.replaceOrAdd(name: name, value: value) }
        all.replaceOrAdd(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let answer = try await transport.send(
            PreparedRequest(
                method: "POST", url: url, headers: all.map { HeaderField(name: $0.name, value: $0.value) },
                body: form.bytes), call: call)
        clockCheck.observe(answer, provider: providerName, logger: logger)
        return answer
    }

    func get(_ url: String) async throws(ProviderFailure) -> HTTPAnswer {
        try await transport.send(
            PreparedRequest(
                method: "GET", url: url,
                headers: Self.standardHeaders.map { HeaderField(name: $0.name, value: $0.value) },
                body: []), call: nil)
    }

    /// Whether the connection is kept for the next call is the transport's (`keep_alive_seconds`,
    /// `DirectTransport`).
    private static let standardHeaders: HTTPHeaders = ["User-Agent": "tokenvault", "Accept": "application/json"]
}
