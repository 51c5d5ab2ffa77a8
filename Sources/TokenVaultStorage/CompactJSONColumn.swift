import Foundation

/// Writes and reads the `scopes` and `labels` columns, which every write encodes and every point
/// read (every token read) decodes. They are written without whitespace, keys sorted:
/// `["a","b"]` and `{"k":"v"}`, with `"` and `\` escaped and control characters as `\u00XX`.
/// Strings without escapes other than `\/` (older rows were written by `JSONEncoder`) are read
/// directly; anything else (another escape, spacing, a hand-edited row) goes through
/// `JSONDecoder`, so the result is always what it would decode.
enum CompactJSONColumn {
    static func encode(strings: [String]) -> String {
        guard !strings.isEmpty else { return "[]" }
        var text = "["
        for (index, string) in strings.enumerated() {
            if index > 0 { text += "," }
            append(string, to: &text)
        }
        return text + "]"
    }

    static func encode(labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "{}" }
        var text = "{"
        for (index, key) in labels.keys.sorted().enumerated() {
            if index > 0 { text += "," }
            append(key, to: &text)
            text += ":"
            append(labels[key]!, to: &text)
        }
        return text + "}"
    }

    /// A JSON string literal of `string`.
    private static func append(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }

    static func strings(_ text: String?) -> [String] {
        guard let text, text != "[]" else { return [] }
        if let parsed = parse(text, open: UInt8(ascii: "["), close: UInt8(ascii: "]"), pairs: false) { return parsed }
        return decoded(text, as: [String].self) ?? []
    }

    static func labels(_ text: String?) -> [String: String] {
        guard let text, text != "{}" else { return [:] }
        if let parsed = parse(text, open: UInt8(ascii: "{"), close: UInt8(ascii: "}"), pairs: true),
            parsed.count.isMultiple(of: 2)
        {
            var labels: [String: String] = [:]
            labels.reserveCapacity(parsed.count / 2)
            for index in stride(from: 0, to: parsed.count, by: 2) {
                // A repeated key is what JSONDecoder would settle differently: let it.
                guard labels.updateValue(parsed[index + 1], forKey: parsed[index]) == nil else {
                    return decoded(text, as: [String: String].self) ?? [:]
                }
            }
            return labels
        }
        return decoded(text, as: [String: String].self) ?? [:]
    }

    private static func decoded<Value: Decodable>(_ text: String, as type: Value.Type) -> Value? {
        try? JSONDecoder().decode(Value.self, from: Data(text.utf8))
    }

    /// The strings of `open "s" (sep "s")* close`, where `sep` is `,` (or alternately `:` and `,`
    /// for an object); nil for anything else. Read in place: a string without `\/` is made from
    /// its bytes at once (they are a `String`'s, so valid UTF-8, and a quote ends no character).
    private static func parse(_ text: String, open: UInt8, close: UInt8, pairs: Bool) -> [String]? {
        var text = text
        return text.withUTF8 { parse($0, open: open, close: close, pairs: pairs) }
    }

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, open: UInt8, close: UInt8, pairs: Bool)
        -> [String]?
    {
        let (quote, backslash, slash) = (UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"))
        guard bytes.count >= 4, bytes.first == open, bytes.last == close else { return nil }
        var result: [String] = []
        var index = 1
        let end = bytes.count - 1
        while true {
            guard index < end, bytes[index] == quote else { return nil }
            index += 1
            let start = index
            var escaped = false
            while true {
                guard index < end else { return nil }
                let byte = bytes[index]
                if byte == quote { break }
                if byte == backslash {
                    guard index + 1 < end, bytes[index + 1] == slash else { return nil }
                    escaped = true
                    index += 2
                    continue
                }
                guard byte >= 0x20 else { return nil }
                index += 1
            }
            let raw = UnsafeBufferPointer(rebasing: bytes[start..<index])
            result.append(escaped ? unescapingSlashes(raw) : String(decoding: raw, as: UTF8.self))
            index += 1
            if index == end { return pairs && !result.count.isMultiple(of: 2) ? nil : result }
            let separator = pairs && !result.count.isMultiple(of: 2) ? UInt8(ascii: ":") : UInt8(ascii: ",")
            guard bytes[index] == separator else { return nil }
            index += 1
        }
    }

    /// `raw` with each `\/` read as `/` (the only escape `parse` lets through).
    private static func unescapingSlashes(_ raw: UnsafeBufferPointer<UInt8>) -> String {
        var value: [UInt8] = []
        value.reserveCapacity(raw.count)
        var index = 0
        while index < raw.count {
            if raw[index] == UInt8(ascii: "\\") { index += 1 }
            value.append(raw[index])
            index += 1
        }
        return String(decoding: value, as: UTF8.self)
    }
}
