import Foundation

/// `application/x-www-form-urlencoded`, both ways: OAuth requests are forms (RFC 6749 appendix B),
/// and HTTP Basic credentials are form-encoded before base64 (RFC 6749 2.3.1).
public enum FormURLEncoding {
    /// Characters left as they are; everything else is percent-encoded (space as `+`).
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    public static func encode(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: false)
            .map { $0.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "" }
            .joined(separator: "+")
    }

    /// Fields sorted by name, so a body is the same from run to run.
    public static func encode(_ form: [String: String]) -> String {
        form.sorted { $0.key < $1.key }.map { "\(encode($0.key))=\(encode($0.value))" }.joined(separator: "&")
    }

    /// Every field in order; a value that is not valid percent-encoding is kept as sent.
    public static func decode(_ body: some Collection<UInt8>) -> [(name: String, value: String)] {
        String(decoding: body, as: UTF8.self).split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (decodeComponent(parts[0]), parts.count > 1 ? decodeComponent(parts[1]) : "")
        }
    }

    public static func decodeComponent(_ text: some StringProtocol) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
