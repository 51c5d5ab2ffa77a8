import TokenVaultCore

/// The `min_ttl` query parameter of a token read: seconds the served token must still be valid,
/// written as a plain decimal (`60`, `2.5`), at most a day. One parser, for the router and the
/// event-loop fast path, so both accept exactly the same texts; anything else (`+5`, `1e3`,
/// `0x10`, `inf`) is a 400 naming the parameter.
enum MinimumTTL {
    static let maximum = 86_400.0

    /// The seconds, or nil when `text` is not a plain decimal within 0-86400.
    static func parse(_ text: some Collection<UInt8>) -> Double? {
        var seenDot = false
        var digits = 0
        for byte in text {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
            case UInt8(ascii: ".") where !seenDot: seenDot = true
            default: return nil
            }
        }
        // 20 digits are plenty for 86400 with a fraction, and keep the conversion exact enough.
        guard digits > 0, digits <= 20, let seconds = Double(String(decoding: text, as: UTF8.self)),
            seconds <= maximum
        else { return nil }
        return seconds
    }

    static let problem = VaultError.invalidField("min_ttl", "must be a plain decimal number of seconds, 0-86400")
}
