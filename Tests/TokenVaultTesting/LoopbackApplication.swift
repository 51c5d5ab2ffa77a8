import Hummingbird
import Logging
import ServiceLifecycle

/// A Hummingbird router served on 127.0.0.1 for the tests' loopback servers (`TestUpstream`,
/// `TestWebhookReceiver`): started, its port known, stopped gracefully.
public struct LoopbackApplication: Sendable {
    public let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Serves `router` on `port` (0: any free one) and returns once it listens; throws what
    /// stopped it if it cannot (the port taken meanwhile by another test), instead of waiting.
    public static func start(_ router: Router<BasicRequestContext>, port: Int = 0, label: String) async throws
        -> LoopbackApplication
    {
        let (ready, readyContinuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: label)
        logger.logLevel = .error
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in readyContinuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(
            configuration: .init(services: [application], gracefulShutdownSignals: [], logger: logger))
        let task = Task {
            defer { readyContinuation.finish() }
            try await group.run()
        }
        var bound: Int?
        for await listening in ready {
            bound = listening
            break
        }
        guard let bound else {
            try await task.value
            throw LoopbackApplicationError(label: label, port: port)
        }
        return LoopbackApplication(port: bound, group: group, task: task)
    }

    /// Stops listening once the requests in progress are answered.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }
}

/// A loopback server that ended before it listened, without saying why.
public struct LoopbackApplicationError: Error, CustomStringConvertible {
    public let label: String
    public let port: Int
    public var description: String { "\(label) stopped before listening on 127.0.0.1:\(port)" }
}
