import NIOSSL
import TokenVaultCore

/// How the daemon's own proxy connections (`ProxyFastCall`) reach an instance's API bases: the
/// instance's TLS context, made from the same configuration as its HTTP client
/// (`TransportSettings.tlsConfiguration`), and its timeouts. One per instance settings: after a
/// reload that changes them, connections made under the old one are not reused.
public final class UpstreamTransport: Sendable {
    public let tls: NIOSSLContext
    public let timeouts: CallTimeouts

    init(_ settings: TransportSettings) throws {
        self.tls = try NIOSSLContext(configuration: settings.tlsConfiguration())
        self.timeouts = settings.timeouts
    }
}
