import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import TokenVaultCore

/// One answer from a provider, its body read in full (or found too large).
struct HTTPAnswer: Sendable {
    var status: Int
    /// Lower-cased names; repeated headers joined with ", ".
    var headers: [String: String]
    var body: [UInt8]
    var bodyTooLarge = false
}

extension OAuth2Provider {
    /// POSTs a form with the client's credentials, as RFC 6749 and RFC 7009 prescribe.
    func post(_ url: String, form: FormBody, redacting secrets: [SecretBytes]) async throws(ProviderFailure)
        -> HTTPAnswer
    {
        var form = form
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        addStandardHeaders(to: &request.headers)
        request.headers.replaceOrAdd(name: "Content-Type", value: "application/x-www-form-urlencoded")
        configuration.clientAuthentication.apply(
            clientID: configuration.clientID, secret: configuration.clientSecret, headers: &request.headers,
            form: &form)
        request.body = .bytes(ByteBuffer(bytes: form.bytes))
        return try await exchange(request)
    }

    func get(_ url: String) async throws(ProviderFailure) -> HTTPAnswer {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        addStandardHeaders(to: &request.headers)
        return try await exchange(request)
    }

    private func addStandardHeaders(to headers: inout HTTPHeaders) {
        // A fresh connection per call. On a kept-alive connection the server has just closed,
        // a request fails exactly like an answer lost after sending (unknown outcome) although
        // the provider never saw it. Refreshes are rare enough to afford a handshake each, and
        // then "refused" reliably means "not sent" and "closed" means "sent".
        headers.add(name: "Connection", value: "close")
        headers.add(name: "User-Agent", value: "tokenvault")
        headers.add(name: "Accept", value: "application/json")
        for (name, value) in configuration.headers {
            headers.replaceOrAdd(name: name, value: value)
        }
    }

    /// Sends `request` and reads the whole answer. Connect and read timeouts are each
    /// `timeout_seconds`; the overall deadline is a backstop against a server trickling bytes.
    private func exchange(_ request: HTTPClientRequest) async throws(ProviderFailure) -> HTTPAnswer {
        let timeout = configuration.timeoutSeconds
        let deadline = NIODeadline.now() + .nanoseconds(Int64((2 * timeout + 1) * 1e9))
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: deadline)
        } catch {
            throw ProviderErrorClassifier.transport(error, requestSent: true)
        }
        var headers: [String: String] = [:]
        for (name, value) in response.headers {
            let key = name.lowercased()
            headers[key] = headers[key].map { "\($0), \(value)" } ?? value
        }
        var answer = HTTPAnswer(status: Int(response.status.code), headers: headers, body: [])
        do {
            let buffer = try await response.body.collect(upTo: Self.maximumBodySize)
            answer.body = Array(buffer.readableBytesView)
        } catch is NIOTooManyBytesError {
            answer.bodyTooLarge = true
        } catch {
            throw ProviderErrorClassifier.transport(error, requestSent: true)
        }
        return answer
    }
}
