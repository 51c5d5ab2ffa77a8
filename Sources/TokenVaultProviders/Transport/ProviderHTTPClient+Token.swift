import Foundation
import Logging
import NIOHTTP1
import TokenVaultCore

/// A token endpoint request as a kind builds it (`ProviderWire`): the form complete (grant fields
/// and client authentication), the headers the kind sends, and what must never show in a message.
public struct TokenCall {
    var url: String
    var form: FormBody
    var headers = HTTPHeaders()
    /// Everything secret the request carried (refresh token, code, verifier, client secret),
    /// removed from the provider's text in case it echoes them.
    var secrets: [SecretBytes]
    /// `refresh` or `exchange`, for the log (set by `KindProvider`).
    var operation = ""
    var credential: CredentialID?
    /// A kind's own check of a usable token response before it is returned (ESIA's `state`).
    var check: (([String: JSONValue]) throws(ProviderFailure) -> Void)?
    /// The key the courier keeps the answer under (`RefreshRequest.call`, `CodeExchangeRequest.call`).
    var providerCall: ProviderCall?
}

extension ProviderHTTPClient {
    /// POSTs a token request and reads the token response, every failure classified; a payload
    /// recovered from the courier's spool says when its request was sent.
    func token(_ call: TokenCall) async throws(ProviderFailure) -> TokenPayload {
        do throws(ProviderFailure) {
            var answer = try await post(call.url, form: call.form, headers: call.headers, call: call.providerCall)
            defer { answer.body.wipe() }
            guard (200..<300).contains(answer.status) else {
                throw ProviderErrorClassifier.classify(
                    status: answer.status, headers: answer.headers, body: answer.body, now: Date(),
                    redacting: call.secrets)
            }
            if answer.bodyTooLarge {
                throw ProviderErrorClassifier.malformedResponse(
                    status: answer.status, detail: "the body is larger than \(HTTPAnswer.maximumBodySize) bytes")
            }
            var payload = try TokenResponseReader.read(
                status: answer.status, headers: answer.headers, body: answer.body, now: Date(),
                redacting: call.secrets, check: call.check)
            payload.sentAt = answer.sentAt
            return payload
        } catch {
            log(error, operation: call.operation, credential: call.credential)
            throw error
        }
    }

    /// POSTs an RFC 7009 revocation. Any 2xx is success, whatever the body (`{}`, `OK`,
    /// nothing): RFC 7009 section 2.2, and T-ID answers either.
    func revoke(_ url: String, form: FormBody, headers: HTTPHeaders, secrets: [SecretBytes], call: ProviderCall?)
        async throws(ProviderFailure)
    {
        do throws(ProviderFailure) {
            let answer = try await post(url, form: form, headers: headers, call: call)
            guard (200..<300).contains(answer.status) else {
                throw ProviderErrorClassifier.classify(
                    status: answer.status, headers: answer.headers, body: answer.body, now: Date(), redacting: secrets)
            }
        } catch {
            log(error, operation: "revoke", credential: nil)
            throw error
        }
    }

    func log(_ failure: ProviderFailure, operation: String, credential: CredentialID?) {
        var metadata: Logger.Metadata = [
            "tokenvault.provider": "\(providerName)", "tokenvault.provider.operation": "\(operation)",
            "tokenvault.failure.kind": "\(failure.kind.rawValue)", "tokenvault.failure.code": "\(failure.code)",
        ]
        if let credential { metadata["tokenvault.credential.id"] = "\(credential)" }
        logger.debug("provider call failed: \(failure.message)", metadata: metadata)
    }
}

/// The answer to a kind without a revocation endpoint (Sber ID, ESIA): deleting a credential
/// then only removes it locally, which the engine reports.
extension ProviderFailure {
    static func revocationNotSupported(_ provider: String, kind: String) -> ProviderFailure {
        ProviderFailure(
            kind: .misconfigured, code: .revocationNotSupported,
            message: "provider '\(provider)' (kind \(kind)) has no revocation endpoint")
    }
}
