import Hummingbird
import Logging
import ServiceLifecycle

/// A Hummingbird router served on 127.0.0.1 for the tests' loopback servers (`TestUpstream`,
/// `TestWebhookReceiver`): started, its port known, stopped gracefully.
public struct LoopbackApplication: Sendable {
    public let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Serves `router` on `port` (0: any free one) and returns once it listens.
    public static func start(_ router: Router<BasicRequestContext>, port: Int = 0, label: String) async
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
        let task = Task { try await group.run() }
        var bound = 0
        for await listening in ready {
            bound = listening
            break
        }
        return LoopbackApplication(port: bound, group: group, task: task)
    }

    /// Stops listening once the requests in progress are answered.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }
}
