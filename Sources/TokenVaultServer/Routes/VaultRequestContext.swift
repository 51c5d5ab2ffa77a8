import Hummingbird
import NIOCore
import Synchronization

/// Per-request state: the connection the request came on (for `SO_PEERCRED`) and a request id
/// that appears in every log line of the request and in problem responses (`X-Request-Id`).
public struct VaultRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: any Channel
    public let requestID: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
        requestID = RequestIDs.next()
        logger[metadataKey: "tokenvault.request.id"] = .string(requestID)
    }
}

/// Request ids: a random per-process prefix and a counter. Unique, cheap, and not secret.
enum RequestIDs {
    private static let prefix = String(UInt32.random(in: 0...UInt32.max), radix: 36)
    private static let counter = Atomic<UInt64>(0)

    static func next() -> String { "\(prefix)-\(String(counter.add(1, ordering: .relaxed).newValue, radix: 36))" }
}
