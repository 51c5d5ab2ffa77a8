import TokenVaultCore

/// The byte layout the daemon and the courier speak over their socketpair, and the spool is
/// written in: integers big-endian, strings and byte strings length-prefixed, optionals flagged.
/// Small on purpose: no reflection, nothing to configure, every field read back or refused.
struct WireWriter {
    private(set) var bytes: [UInt8] = []

    /// Zeroes what was written, once it has been copied where it goes (a sealed spool file).
    mutating func wipe() { bytes.wipe() }

    mutating func u8(_ value: UInt8) { bytes.append(value) }

    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }

    mutating func u64(_ value: UInt64) { withUnsafeBytes(of: value.bigEndian) { bytes += $0 } }

    mutating func i64(_ value: Int64) { u64(UInt64(bitPattern: value)) }

    mutating func bool(_ value: Bool) { u8(value ? 1 : 0) }

    mutating func double(_ value: Double) { u64(value.bitPattern) }

    mutating func data(_ value: some Collection<UInt8>) {
        u32(UInt32(value.count))
        bytes += value
    }

    mutating func string(_ value: String) { data(Array(value.utf8)) }

    mutating func optional<Value>(_ value: Value?, _ write: (inout WireWriter, Value) -> Void) {
        guard let value else { return u8(0) }
        u8(1)
        write(&self, value)
    }

    /// A secret's bytes, copied once into the frame (which the caller wipes or seals).
    mutating func secret(_ value: SecretBytes) { value.withUnsafeBytes { data($0) } }
}

/// Reads what `WireWriter` wrote; every read checks the bytes are there.
struct WireReader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func u8() throws -> UInt8 {
        try need(1)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u32() throws -> UInt32 {
        try need(4)
        defer { offset += 4 }
        return bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u64() throws -> UInt64 {
        try need(8)
        defer { offset += 8 }
        return bytes[offset..<offset + 8].reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func i64() throws -> Int64 { Int64(bitPattern: try u64()) }

    mutating func bool() throws -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        default: throw WireError.malformed("a flag is neither 0 nor 1")
        }
    }

    mutating func double() throws -> Double { Double(bitPattern: try u64()) }

    mutating func data() throws -> [UInt8] {
        let count = Int(try u32())
        try need(count)
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func string() throws -> String {
        let data = try data()
        guard let text = String(validating: data, as: UTF8.self) else {
            throw WireError.malformed("a string is not UTF-8")
        }
        return text
    }

    mutating func optional<Value>(_ read: (inout WireReader) throws -> Value) throws -> Value? {
        try bool() ? try read(&self) : nil
    }

    mutating func secret() throws -> SecretBytes {
        let count = Int(try u32())
        try need(count)
        defer { offset += count }
        return SecretBytes(bytes[offset..<offset + count])
    }

    /// Refuses trailing bytes: a frame or file is read exactly.
    func finish() throws {
        guard isAtEnd else { throw WireError.malformed("\(bytes.count - offset) unexpected trailing bytes") }
    }

    private func need(_ count: Int) throws {
        guard count >= 0, bytes.count - offset >= count else { throw WireError.malformed("it ends too early") }
    }
}

struct WireError: Error, CustomStringConvertible {
    let description: String
    static func malformed(_ what: String) -> WireError { WireError(description: "malformed courier data: \(what)") }
}
