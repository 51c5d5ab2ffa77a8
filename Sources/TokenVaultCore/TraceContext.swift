/// A caller's W3C trace context (`traceparent`, Trace Context Level 1): the trace id a request's
/// log lines carry, so that they can be found from the caller's trace, and the header a webhook
/// delivery the request caused is sent with. The header also goes upstream on a proxied call as
/// the caller sent it (`ForwardedHeaders`). Pure.
public struct TraceContext: Sendable, Equatable {
    /// The request being answered's, for the writes it causes (set by the daemon's middleware).
    @TaskLocal public static var current: TraceContext?

    /// 32 lower-case hex digits, not all zero.
    public var traceID: String
    /// 16 lower-case hex digits, not all zero: the caller's span.
    public var parentID: String
    /// The header as version `00` writes it (a later version's extra fields dropped).
    public var traceparent: String

    /// Nil when `traceparent` is not a valid header of version `00` (or of a later version,
    /// read as its first four fields, as the specification asks).
    public init?(traceparent: String) {
        let fields = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard fields.count >= 4, fields[0].count == 2, Self.isHex(fields[0]), fields[0] != "ff",
            fields[0] != "00" || fields.count == 4, fields[1].count == 32, Self.isHex(fields[1]),
            fields[2].count == 16, Self.isHex(fields[2]), fields[3].count == 2, Self.isHex(fields[3]),
            fields[1].contains(where: { $0 != "0" }), fields[2].contains(where: { $0 != "0" })
        else { return nil }
        traceID = String(fields[1])
        parentID = String(fields[2])
        self.traceparent = "00-\(fields[1])-\(fields[2])-\(fields[3])"
    }

    private static func isHex(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
