import Foundation
import TokenVaultCore

/// Reads a 2xx answer from a token endpoint. Anything but a usable token response is an
/// unknown outcome: the provider answered "OK", so it may have rotated the refresh token even
/// though we cannot read the new one. A 2xx carrying an `error` (some gateways do that) is
/// classified like any refusal.
public enum TokenResponseReader {
    public static func read(
        status: Int, headers: [String: String], body: [UInt8], now: Date, redacting secrets: [SecretBytes] = []
    ) throws(ProviderFailure) -> TokenPayload {
        try read(status: status, headers: headers, body: body, now: now, redacting: secrets, check: nil)
    }

    /// As above; `check` sees the fields of a token response (not of an error) before they are
    /// decoded, for a kind's own rules (ESIA: the echoed `state` must be the one sent).
    static func read(
        status: Int, headers: [String: String], body: [UInt8], now: Date, redacting secrets: [SecretBytes],
        check: (([String: JSONValue]) throws(ProviderFailure) -> Void)?
    ) throws(ProviderFailure) -> TokenPayload {
        guard !body.isEmpty else {
            throw ProviderErrorClassifier.malformedResponse(status: status, detail: "the body is empty")
        }
        if looksLikeCompactJWT(body) {
            throw ProviderErrorClassifier.malformedResponse(
                status: status,
                detail: "the endpoint answered a JWT, not a token response (a JWT body is not decoded: its "
                    + "signature cannot be checked here)")
        }
        guard let json = try? JSONDecoder().decode(JSONValue.self, from: Data(body)),
            case .object(let fields) = json
        else {
            throw ProviderErrorClassifier.malformedResponse(status: status, detail: "the body is not a JSON object")
        }
        if fields["access_token"] == nil, fields["accessToken"] == nil, case .string? = fields["error"] {
            throw ProviderErrorClassifier.classify(
                status: status, headers: headers, body: body, now: now, redacting: secrets)
        }
        try check?(fields)
        do {
            let payload = try TokenPayloadDecoder().decode(fields)
            guard payload.kind == .oauth2 else {
                throw VaultError.invalidPayload("a token endpoint answered with a verify_token")
            }
            return payload
        } catch let error as VaultError {
            // VaultError messages name fields, never values.
            throw ProviderErrorClassifier.malformedResponse(status: status, detail: error.message)
        } catch {
            throw ProviderErrorClassifier.malformedResponse(status: status, detail: "the body could not be decoded")
        }
    }

    /// `xxx.yyy.zzz` in base64url: what Sber sometimes sends instead of JSON.
    static func looksLikeCompactJWT(_ body: [UInt8]) -> Bool {
        var trimmed = body[...]
        while let last = trimmed.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") || last == 32 {
            trimmed = trimmed.dropLast()
        }
        let parts = trimmed.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 5, parts[0].count > 0 else { return false }
        return trimmed.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
    }
}
