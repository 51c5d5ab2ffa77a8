import Foundation
import TokenVaultCore

/// Turns a provider's refusal into a `ProviderFailure` the engine can act on, following the
/// error classes of providers.md. Pure: no I/O, `now` is given, so every rule is unit-tested.
///
/// Precedence: a recognised provider error code decides; otherwise the HTTP status does
/// (5xx, 429 and 408 are worth retrying; any other refusal means our request or registration
/// is wrong, and hammering the provider will not fix it).
public enum ProviderErrorClassifier {
    /// T-ID's `limit_exceeded` means "too many token issues": back off for a long time, at
    /// least this many seconds, whatever `Retry-After` says.
    public static let limitExceededBackoff: Double = 15 * 60

    /// Classifies a non-2xx answer, or a 2xx whose body carries an `error`.
    /// `headers` are keyed by lower-cased name.
    public static func classify(status: Int, headers: [String: String], body: [UInt8], now: Date) -> ProviderFailure {
        classify(status: status, headers: headers, body: body, now: now, redacting: [])
    }

    /// As above, also removing `secrets` (what the request carried: refresh token, client
    /// secret) from the provider's text, in case it echoes them.
    public static func classify(
        status: Int, headers: [String: String], body: [UInt8], now: Date, redacting secrets: [SecretBytes]
    ) -> ProviderFailure {
        let retryAfter = header("retry-after", in: headers).flatMap { RetryAfter.seconds($0, now: now) }
        var failure: ProviderFailure
        if let parsed = ProviderErrorBody.parse(body) {
            failure = classify(parsed, status: status, secrets: secrets)
        } else {
            failure = ProviderFailure(
                kind: kind(forStatus: status), code: .http(status),
                message: "HTTP \(status) with \(describeUnreadableBody(body, headers: headers))")
        }
        failure.httpStatus = status
        if let retryAfter { failure.retryAfter = max(failure.retryAfter ?? 0, retryAfter) }
        return failure
    }

    /// A 2xx answer that is not a usable token response. The provider may have acted on the
    /// request (and rotated the refresh token), so the outcome is unknown.
    public static func malformedResponse(status: Int, detail: String) -> ProviderFailure {
        ProviderFailure(
            kind: .unknownOutcome, code: .malformedResponse,
            message: OperatorText.clean("HTTP \(status) but the token response is unusable: \(detail)"),
            httpStatus: status)
    }

    // MARK: Rules

    /// The class an RFC 6749 / T-ID error code puts a failure in; nil for codes we do not know.
    static func kind(forErrorCode code: String) -> ProviderFailure.Kind? {
        switch code.lowercased() {
        case "invalid_grant": .invalidGrant
        case "invalid_client", "unauthorized_client", "unsupported_grant_type": .misconfigured
        // Our request is wrong: retrying the same request cannot succeed.
        case "invalid_request", "invalid_scope": .misconfigured
        case "server_error", "temporarily_unavailable", "limit_exceeded": .transient
        // RFC 9449: a nonce challenge left after the one new proof `DPoPTransport` sends (or one
        // recovered from the spool): try later; a proof the server will not take (its clock or its
        // algorithms disagree with ours, or it saw the proof before): not retried on its own.
        case "use_dpop_nonce": .transient
        case "invalid_dpop_proof": .misconfigured
        default: nil
        }
    }

    /// The class of a refusal that names no code we know. 408 means the server gave up
    /// waiting for our request, so it was not acted on.
    static func kind(forStatus status: Int) -> ProviderFailure.Kind {
        status >= 500 || status == 429 || status == 408 ? .transient : .misconfigured
    }

    private static func classify(_ body: ProviderErrorBody, status: Int, secrets: [SecretBytes]) -> ProviderFailure {
        let text = body.description.map { OperatorText.clean($0, removing: secrets) }
        switch body.shape {
        case .oauth:
            let error = body.error ?? ""
            let code = safeCode(error).map(ProviderFailure.Code.init(rawValue:)) ?? .http(status)
            var failure = ProviderFailure(
                kind: kind(forErrorCode: error) ?? kind(forStatus: status), code: code,
                message: text ?? "the provider refused the request with \(code) (HTTP \(status))")
            if error.lowercased() == "limit_exceeded" {
                failure.retryAfter = limitExceededBackoff
                if text == nil { failure.message = "too many token requests; backing off for at least 15 minutes" }
            }
            return failure

        case .esia(let code):
            return esia(code: code, error: body.error, status: status, text: text ?? code)

        case .sberGateway(let httpCode, let information):
            let gatewayStatus = httpCode ?? status
            let message = text ?? "the API gateway refused the request (HTTP \(gatewayStatus))"
            if gatewayStatus == 400, let information, information.lowercased().contains("invalid_grant") {
                return ProviderFailure(kind: .invalidGrant, code: .invalidGrant, message: message)
            }
            let kind: ProviderFailure.Kind =
                switch gatewayStatus {
                case 401, 403: .misconfigured
                default: kind(forStatus: gatewayStatus)
                }
            return ProviderFailure(kind: kind, code: .http(gatewayStatus), message: message)

        case .unrecognised:
            return ProviderFailure(
                kind: kind(forStatus: status), code: .http(status),
                message: text ?? "HTTP \(status) with a JSON body naming no error")
        }
    }

    /// ESIA's numbered errors (providers.md); unknown numbers fall back to the `error` field.
    private static func esia(code number: String, error: String?, status: Int, text: String) -> ProviderFailure {
        // ESIA's numbers pass through as the provider's own codes.
        let code = ProviderFailure.Code(rawValue: number)
        switch number {
        case "ESIA-007011":
            return ProviderFailure(kind: .invalidGrant, code: code, message: text)
        case "ESIA-007007", "ESIA-007008":
            return ProviderFailure(kind: .transient, code: code, message: text)
        case "ESIA-007015":
            return ProviderFailure(
                kind: .misconfigured, code: code,
                message: OperatorText.clean("clock skew: ESIA rejected the request timestamp; check NTP. \(text)"))
        case "ESIA-007053":
            return ProviderFailure(
                kind: .misconfigured, code: code,
                message: OperatorText.clean("bad signature: ESIA rejected the signed client_secret. \(text)"))
        default:
            let kind = error.flatMap(kind(forErrorCode:)) ?? kind(forStatus: status)
            return ProviderFailure(kind: kind, code: code, message: text)
        }
    }

    // MARK: Helpers

    /// A provider code fit to be a stable machine-readable value; nil for anything odd.
    static func safeCode(_ error: String) -> String? {
        guard (1...64).contains(error.utf8.count),
            error.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "_-.:".utf8.contains(byte)
            })
        else { return nil }
        return error
    }

    static func header(_ name: String, in headers: [String: String]) -> String? {
        headers[name] ?? headers.first { $0.key.lowercased() == name }?.value
    }

    /// Says what came back without quoting it: an HTML error page may echo the request.
    private static func describeUnreadableBody(_ body: [UInt8], headers: [String: String]) -> String {
        guard !body.isEmpty else { return "an empty body" }
        let type = header("content-type", in: headers)?.split(separator: ";").first
            .map { OperatorText.clean(String($0), limit: 60) }
        return "a body that is not a JSON error (\(type ?? "no content type"), \(body.count) bytes)"
    }
}
