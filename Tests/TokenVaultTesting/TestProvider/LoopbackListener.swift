import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// The listening socket on 127.0.0.1 and every connection it accepted, so an outage can be real:
/// `close` stops listening and hangs up on open keep-alive connections (a pooled client must see
/// them die), and `bind` can take the same port again afterwards (SO_REUSEADDR).
final class LoopbackListener: Sendable {
    private struct State {
        var listening: (any Channel)?
        var connections: [ObjectIdentifier: any Channel] = [:]
        /// False while offline: a connection accepted just before the listener closed is hung up on.
        var accepting = false
        /// Connections accepted since the start.
        var accepted = 0
    }

    private let state = Mutex(State())
    private let core: ProviderCore
    /// HTTPS when set (`TestServerTLS`).
    private let tls: NIOSSLContext?

    init(core: ProviderCore, tls: NIOSSLContext? = nil) {
        self.core = core
        self.tls = tls
    }

    /// Listens on `port` (0: any free one) and returns the port.
    func bind(port: Int) async throws -> Int {
        state.withLock { $0.accepting = true }
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self, core, tls] channel in
                guard track(channel) else {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                return channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(OAuthConnectionHandler(core: core))
                }
            }
        do {
            let channel = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
            state.withLock { $0.listening = channel }
            return channel.localAddress?.port ?? port
        } catch {
            state.withLock { $0.accepting = false }
            throw error
        }
    }

    private func track(_ channel: any Channel) -> Bool {
        let id = ObjectIdentifier(channel)
        let accepted = state.withLock { state in
            guard state.accepting else { return false }
            state.accepted += 1
            state.connections[id] = channel
            return true
        }
        if accepted {
            channel.closeFuture.whenComplete { [self] _ in
                _ = state.withLock { $0.connections.removeValue(forKey: id) }
            }
        }
        return accepted
    }

    /// Connections accepted since the start (a client that keeps connections opens few).
    var acceptedConnections: Int { state.withLock { $0.accepted } }

    /// Stops listening, then closes every open connection; returns when all are closed.
    func close() async {
        let (listening, connections) = state.withLock { state in
            state.accepting = false
            defer { state.listening = nil }
            return (state.listening, Array(state.connections.values))
        }
        try? await listening?.close()
        for connection in connections { try? await connection.close() }
    }

    /// `close` without waiting, for a server dropped without `shutdown`.
    func closeNow() {
        let channels = state.withLock { state in
            state.accepting = false
            defer { state.listening = nil }
            return [state.listening].compactMap { $0 } + Array(state.connections.values)
        }
        for channel in channels { channel.close(promise: nil) }
    }
}
