import Foundation

/// Reads a `Retry-After` header (RFC 9110 §10.2.3): delta-seconds or an HTTP-date, turned into
/// seconds to wait from `now`. A date in the past means "now" (0); anything unreadable is
/// ignored rather than guessed at, so the engine's own backoff applies. A wait longer than
/// `maximum` (a day) is read as `maximum`: a provider cannot park a credential for longer, and
/// no number it sends, however large, turns into a time that does not fit.
enum RetryAfter {
    static let maximum: Double = 86_400

    static func seconds(_ value: String, now: Date) -> Double? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return nil }
        if let delta = delta(text) { return min(delta, maximum) }
        guard let epoch = HTTPDate.parse(text, near: now) else { return nil }
        return min(max(0, epoch - now.timeIntervalSince1970), maximum)
    }

    /// Whole seconds (the RFC form), tolerating a sign and a fraction some servers send.
    private static func delta(_ text: String) -> Double? {
        let digits = text.drop { $0 == "-" || $0 == "+" }
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let number = Double(text), number.isFinite
        else { return nil }
        return max(0, number)
    }
}
