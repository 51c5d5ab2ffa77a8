import Foundation
import TokenVaultCore

/// The error body shapes providers use, read into one form the classifier can reason about:
/// - RFC 6749 §5.2: `{"error": "invalid_grant", "error_description": "…"}`;
/// - T-ID: `{"error": "…", "error_message": "…"}`;
/// - Sber's API gateway: `{"httpCode": "401", "httpMessage": "…", "moreInformation": "…"}`;
/// - ESIA: RFC 6749 with `error_description` starting `ESIA-0070xx:`.
struct ProviderErrorBody: Equatable {
    enum Shape: Equatable {
        case oauth
        case sberGateway(httpCode: Int?, moreInformation: String?)
        case esia(code: String)
        /// A JSON object with none of the known fields (maybe a generic `message`).
        case unrecognised
    }

    var shape: Shape
    /// The `error` field, when a string.
    var error: String?
    /// The provider's text for people (unsanitised: the classifier cleans it).
    var description: String?

    /// Nil when the body is not a JSON object (HTML, plain text, empty, truncated).
    static func parse(_ body: [UInt8]) -> ProviderErrorBody? {
        guard !body.isEmpty,
            let json = try? JSONDecoder().decode(JSONValue.self, from: Data(body)),
            case .object(let fields) = json
        else { return nil }

        let error = string(fields["error"])
        if fields["httpCode"] != nil || fields["moreInformation"] != nil {
            let information = string(fields["moreInformation"])
            let text = [string(fields["httpMessage"]), information].compactMap { $0 }.joined(separator: ": ")
            return ProviderErrorBody(
                shape: .sberGateway(httpCode: integer(fields["httpCode"]), moreInformation: information),
                error: error, description: text.isEmpty ? nil : text)
        }
        let description = string(fields["error_description"]) ?? string(fields["error_message"])
        if let description, let code = esiaCode(description) {
            return ProviderErrorBody(shape: .esia(code: code), error: error, description: description)
        }
        if error != nil {
            return ProviderErrorBody(shape: .oauth, error: error, description: description)
        }
        return ProviderErrorBody(
            shape: .unrecognised, error: nil, description: description ?? string(fields["message"]))
    }

    /// `ESIA-007011: …` gives `ESIA-007011`.
    static func esiaCode(_ description: String) -> String? {
        let prefix = "ESIA-"
        guard description.hasPrefix(prefix) else { return nil }
        let digits = description.dropFirst(prefix.count).prefix { $0.isASCII && $0.isNumber }
        guard digits.count == 6 else { return nil }
        return prefix + digits
    }

    private static func string(_ value: JSONValue?) -> String? {
        guard case .string(let text)? = value, !text.isEmpty else { return nil }
        return text
    }

    private static func integer(_ value: JSONValue?) -> Int? {
        switch value {
        case .integer(let number)?: return Int(exactly: number)
        case .number(let number)?: return Int(exactly: number)
        case .string(let text)?: return Int(text.trimmingCharacters(in: .whitespaces))
        default: return nil
        }
    }
}
