import Hummingbird
import NIOCore

/// Per-request state: the connection the request came on, from which `SO_PEERCRED` is read.
/// (Hummingbird already tags each request's log lines with `hb.request.id`.)
public struct VaultRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
