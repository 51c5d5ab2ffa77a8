/// An ASCII hex digit's value, either case: the one reading of `%XX` escapes and IPv6 hosts for
/// the URL checks (`UpstreamURL`), form decoding (`FormEncoding`) and the proxy's search of answers
/// for a token (`TokenRedaction`).
public enum HexDigit {
    @inlinable
    public static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x37
        case 0x61...0x66: byte - 0x57
        default: nil
        }
    }
}
