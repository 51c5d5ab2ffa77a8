import Foundation

/// Reads the `scopes` and `labels` columns, which every point read (every token read) decodes.
/// They are written by `JSONEncoder` without whitespace: `["a","b"]` and `{"k":"v"}`. Strings
/// without escapes other than `\/` are read directly; anything else (another escape, spacing, a
/// hand-edited row) goes through `JSONDecoder`, so the result is always what it would decode.
enum CompactJSONColumn {
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
    /// for an object); nil for anything else.
    private static func parse(_ text: String, open: UInt8, close: UInt8, pairs: Bool) -> [String]? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 4, bytes.first == open, bytes.last == close else { return nil }
        var result: [String] = []
        var index = 1
        let end = bytes.count - 1
        while true {
            guard index < end, bytes[index] == UInt8(ascii: "\"") else { return nil }
            index += 1
            var value: [UInt8] = []
            while true {
                guard index < end else { return nil }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") { break }
                if byte == UInt8(ascii: "\\") {
                    guard index + 1 < end, bytes[index + 1] == UInt8(ascii: "/") else { return nil }
                    value.append(UInt8(ascii: "/"))
                    index += 2
                    continue
                }
                guard byte >= 0x20 else { return nil }
                value.append(byte)
                index += 1
            }
            index += 1
            guard let string = String(validating: value, as: UTF8.self) else { return nil }
            result.append(string)
            if index == end { return pairs && !result.count.isMultiple(of: 2) ? nil : result }
            let separator = pairs && !result.count.isMultiple(of: 2) ? UInt8(ascii: ":") : UInt8(ascii: ",")
            guard bytes[index] == separator else { return nil }
            index += 1
        }
    }
}
