/// A JSON value written exactly as a provider would write it. Providers differ in how they spell
/// a number (`3600`, `3600.0`, `"3600"`), which `JSONEncoder` would normalise away; keys keep
/// their order so bodies are stable.
enum JSONText: Sendable {
    case string(String)
    case integer(Int)
    case float(Double)
    case bool(Bool)
    case null
    case array([JSONText])
    case object([(String, JSONText)])

    var rendered: String {
        switch self {
        case .string(let text): return Self.quoted(text)
        case .integer(let number): return String(number)
        case .float(let number):
            if number.isFinite, number == number.rounded(), abs(number) < 1e15 { return "\(Int64(number)).0" }
            return number.isFinite ? "\(number)" : "null"
        case .bool(let flag): return flag ? "true" : "false"
        case .null: return "null"
        case .array(let items): return "[" + items.map(\.rendered).joined(separator: ",") + "]"
        case .object(let fields):
            return "{" + fields.map { "\(Self.quoted($0.0)):\($0.1.rendered)" }.joined(separator: ",") + "}"
        }
    }

    var bytes: [UInt8] { Array(rendered.utf8) }

    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
