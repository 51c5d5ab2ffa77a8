import NIOCore
import Synchronization

/// Reads the connection's `SO_PEERCRED` once, when the connection starts, and keeps it until it
/// closes: the one place peer credentials are read. The kernel's answer cannot change during a
/// connection, and both the event-loop fast path (`peer`, on the connection's own loop, no lock)
/// and the router (`PeerCredentials.of`, from any thread) take it from here, so they can never
/// disagree about who is calling.
final class PeerCredentialsHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Peers of the open connections, by channel.
    private static let known = Mutex<[ObjectIdentifier: PeerCredentials]>([:])

    /// The peer of an open connection, if its credentials could be read.
    static func peer(of channel: any Channel) -> PeerCredentials? {
        known.withLock { $0[ObjectIdentifier(channel)] }
    }

    /// The peer, once read; only on the connection's event loop.
    private(set) var peer: PeerCredentials?

    func handlerAdded(context: ChannelHandlerContext) {
        // An accepted connection is usually active before its pipeline is complete.
        if context.channel.isActive { remember(context.channel) }
    }

    func channelActive(context: ChannelHandlerContext) {
        remember(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        _ = Self.known.withLock { $0.removeValue(forKey: ObjectIdentifier(context.channel)) }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        _ = Self.known.withLock { $0.removeValue(forKey: ObjectIdentifier(context.channel)) }
    }

    private func remember(_ channel: any Channel) {
        guard peer == nil, let read = PeerCredentials.readNow(from: channel) else { return }
        peer = read
        Self.known.withLock { $0[ObjectIdentifier(channel)] = read }
    }
}

@available(*, unavailable)
extension PeerCredentialsHandler: Sendable {}
