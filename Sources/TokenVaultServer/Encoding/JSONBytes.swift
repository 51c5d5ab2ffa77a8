import NIOCore
import TokenVaultCore

/// Writes JSON into memory reserved up front (`ByteBuffer.writeWithUnsafeMutableBytes`), the one
/// writer of JSON strings the daemon builds by hand (`TokenJSON`, `MetadataJSON`, the log lines).
/// `ByteBuffer`'s own writes check uniqueness, capacity and exclusive access on every call, which
/// was most of the time of a page of credentials' JSON; here one reservation covers a whole
/// document, and each write only checks that it stays inside it (and stops the process rather
/// than write past it).
struct JSONBytes {
    private let output: UnsafeMutableRawBufferPointer
    /// Bytes written so far.
    private(set) var count = 0

    init(_ output: UnsafeMutableRawBufferPointer) { self.output = output }

    /// The most bytes `string` writes for `length` bytes of text: quotes, and six per byte
    /// (`\u00XX`).
    static func bound(string length: Int) -> Int { 2 + 6 * length }
    /// The most bytes `string` writes for `text`.
    static func bound(_ text: String) -> Int { bound(string: text.utf8.count) }
    /// The most bytes `integer` and `timestamp` write.
    static let numberBound = 20
    static let timestampBound = 40

    private mutating func reserve(_ length: Int) -> UnsafeMutableRawPointer {
        precondition(length <= output.count - count, "JSONBytes: the reservation is too small")
        defer { count += length }
        return output.baseAddress! + count
    }

    mutating func raw(_ text: StaticString) {
        reserve(text.utf8CodeUnitCount).copyMemory(from: text.utf8Start, byteCount: text.utf8CodeUnitCount)
    }

    mutating func byte(_ value: UInt8) { reserve(1).storeBytes(of: value, as: UInt8.self) }

    /// A JSON string of UTF-8 `bytes` as `JSONEncoder` writes it: quote and backslash escaped,
    /// backspace, form feed, newline, return and tab as `\b \f \n \r \t`, other control
    /// characters as `\u00XX`; runs of plain bytes are copied in one go.
    mutating func string(_ bytes: UnsafeRawBufferPointer) {
        byte(UInt8(ascii: "\""))
        var plainStart = 0
        for index in 0..<bytes.count {
            let value = bytes[index]
            guard value < 0x20 || value == UInt8(ascii: "\"") || value == UInt8(ascii: "\\") else { continue }
            copy(UnsafeRawBufferPointer(rebasing: bytes[plainStart..<index]))
            switch value {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x08: raw("\\b")
            case 0x0c: raw("\\f")
            case UInt8(ascii: "\n"): raw("\\n")
            case UInt8(ascii: "\r"): raw("\\r")
            case UInt8(ascii: "\t"): raw("\\t")
            default:
                let hex: StaticString = "0123456789abcdef"
                raw("\\u00")
                byte(hex.utf8Start[Int(value >> 4)])
                byte(hex.utf8Start[Int(value & 0x0f)])
            }
            plainStart = index + 1
        }
        copy(UnsafeRawBufferPointer(rebasing: bytes[plainStart..<bytes.count]))
        byte(UInt8(ascii: "\""))
    }

    mutating func string(_ text: String) {
        var text = text
        text.withUTF8 { string(UnsafeRawBufferPointer($0)) }
    }

    /// A JSON array of strings.
    mutating func strings(_ values: [String]) {
        raw("[")
        for (index, value) in values.enumerated() {
            if index > 0 { raw(",") }
            string(value)
        }
        raw("]")
    }

    /// `"namespace/name"`: an id's characters (letters, digits, `.`, `_`, `-`: `CredentialID`
    /// validates them) need no escaping.
    mutating func string(_ id: CredentialID) {
        byte(UInt8(ascii: "\""))
        copy(id.namespace)
        byte(UInt8(ascii: "/"))
        copy(id.name)
        byte(UInt8(ascii: "\""))
    }

    mutating func integer(_ value: some BinaryInteger) {
        var scratch = (0 as UInt64, 0 as UInt64, 0 as UInt64)
        let negative = value < 0
        var magnitude = UInt64(value.magnitude)
        withUnsafeMutableBytes(of: &scratch) { scratch in
            var start = scratch.count
            repeat {
                start -= 1
                scratch[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if negative {
                start -= 1
                scratch[start] = UInt8(ascii: "-")
            }
            copy(UnsafeRawBufferPointer(rebasing: scratch[start...]))
        }
    }

    /// A quoted RFC 3339 time (`Timestamp.description`).
    mutating func timestamp(_ time: Timestamp) {
        byte(UInt8(ascii: "\""))
        let start = count
        let written = time.writeRFC3339(
            to: UnsafeMutableRawBufferPointer(start: output.baseAddress! + start, count: output.count - start))
        if let written {
            count += written
            byte(UInt8(ascii: "\""))
        } else {
            count -= 1
            string(time.description)
        }
    }

    private mutating func copy(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        reserve(bytes.count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
    }

    private mutating func copy(_ text: String) {
        var text = text
        text.withUTF8 { copy(UnsafeRawBufferPointer($0)) }
    }
}

extension ByteBuffer {
    /// Writes through `JSONBytes` into at least `bound` bytes reserved at the writer index.
    mutating func writeJSON(reserving bound: Int, _ body: (inout JSONBytes) -> Void) {
        writeWithUnsafeMutableBytes(minimumWritableBytes: bound) { output in
            var json = JSONBytes(output)
            body(&json)
            return json.count
        }
    }
}
