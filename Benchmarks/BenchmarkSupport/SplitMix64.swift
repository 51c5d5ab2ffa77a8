/// A small, fast pseudo-random generator (SplitMix64): no locking, unlike the system one, and
/// a fixed sequence for a fixed seed, so every run and both sides of a comparison touch the
/// same rows in the same order.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Random base64url text, the shape of real (T-ID) access and refresh tokens.
    public mutating func token(length: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: length)
        for index in bytes.indices { bytes[index] = Self.alphabet[Int(next() & 63)] }
        return String(decoding: bytes, as: UTF8.self)
    }
}
