import Foundation
import Logging
import Synchronization
import TokenVaultCore
import TokenVaultProviders
import TokenVaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The courier process (`tokenvault courier`, started by the daemon, not for people): it makes
/// the daemon's provider calls, so an answer outlives a daemon that dies while waiting for it.
///
/// It holds no provider logic, no database and no master key: it sends the requests it is given
/// (with the TLS settings it reads itself from the provider instances' configuration), returns
/// each answer, and keeps the answers to keyed calls until the daemon settles them. When the
/// daemon is gone (end of file on the socketpair), it finishes the calls in flight, seals every
/// unsettled answer to the spool's public key, writes it to the spool, and exits. It ignores
/// SIGTERM, SIGINT and SIGHUP: it runs in its own process group, and even a signal sent to the
/// whole service reaches the daemon too, whose end of file tells the courier what to do.
public enum Courier {
    /// Serves the daemon on `descriptor` until it goes away; returns the exit status.
    public static func run(descriptor: Int32, spoolDirectory: String, logger: Logger) async -> Int32 {
        for signalNumber in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { signal(signalNumber, SIG_IGN) }
        let spool = Spool(directory: spoolDirectory)
        // Held until the process ends: a daemon that starts meanwhile waits for this courier.
        let lock: FileLock?
        do {
            try DurableFile.makeDirectory(spoolDirectory)
            lock = try FileLock.exclusive(spool.lockPath, wait: true)
        } catch {
            logger.critical("courier: cannot lock the spool: \(error)")
            return 1
        }
        defer { withExtendedLifetime(lock) {} }
        var reader = FrameReader(descriptor: descriptor)
        let writer = FrameWriter(descriptor: descriptor)
        let hello: CourierMessage.Hello
        do {
            guard case .hello(let received)? = try reader.receive() else {
                logger.critical("courier: the daemon did not introduce itself")
                return 1
            }
            hello = received
            try writer.send(.ready(pid: getpid()))
        } catch {
            logger.critical("courier: \(error)")
            return 1
        }
        let state = CourierState()
        _ = state.replaceInstances(hello.instances, version: hello.version, logger: logger)
        // The blocking read loop runs on a thread of its own; calls run as tasks.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                // Stateless between frames (it reads exactly one frame at a time).
                var reader = FrameReader(descriptor: descriptor)
                serve(&reader, writer: writer, state: state, logger: logger)
                done.resume()
            }
            thread.name = "tokenvault-courier-reader"
            thread.start()
        }
        // The daemon is gone: finish what is in flight, then spool what it never settled.
        while state.inFlight > 0 { try? await Task.sleep(for: .milliseconds(10)) }
        let unsettled = state.takeRetained()
        var spooled = 0
        for var entry in unsettled {
            defer { entry.result.wipe() }
            do {
                try spool.write(entry, publicKey: hello.spoolPublicKey)
                spooled += 1
            } catch {
                logger.critical(
                    "courier: an answer could not be spooled: \(error)",
                    metadata: ["tokenvault.call.key": "\(entry.key)"])
            }
        }
        if spooled > 0 || !unsettled.isEmpty {
            logger.notice(
                "courier: the daemon is gone; \(spooled) answer(s) spooled for it",
                metadata: ["tokenvault.spool": "\(spoolDirectory)"])
        }
        await state.shutdown()
        return spooled == unsettled.count ? 0 : 1
    }

    static func serve(_ reader: inout FrameReader, writer: FrameWriter, state: CourierState, logger: Logger) {
        while true {
            let message: CourierMessage?
            do {
                message = try reader.receive()
            } catch {
                logger.error("courier: \(error)")
                return
            }
            switch message {
            case nil: return
            case .call(let call)?:
                state.started()
                // The route is taken here, before the next frame is read: an `instances` frame
                // that follows cannot retire it under this call.
                let route = state.take(call)
                Task {
                    let sentAt = Timestamp.now()
                    var result = await state.send(call, on: route)
                    if let key = call.key {
                        state.retain(Spool.Entry(key: key, context: call.context, sentAt: sentAt, result: result))
                    }
                    try? writer.send(.answer(id: call.id, result))
                    // Copied into the frame; a kept (keyed) answer is wiped when settled or spooled.
                    result.wipe()
                    state.finished()
                }
            case .settle(let key)?: state.settle(key)
            case .instances(let id, let version, let instances)?:
                // Before the next frame is read: a call on a new route always finds it.
                let unavailable = state.replaceInstances(instances, version: version, logger: logger)
                try? writer.send(.instancesReady(id: id, unavailable: unavailable))
            case .hello?, .ready?, .answer?, .instancesReady?:
                logger.error("courier: unexpected message from the daemon")
            }
        }
    }

    /// A direct transport for one configured instance (TLS settings read here, from the same
    /// configuration), nil for one without endpoints. Throws what does not load.
    static func transport(for instance: CourierMessage.Instance) throws -> (any ProviderTransport)? {
        let options = try JSONDecoder().decode([String: JSONValue].self, from: Data(instance.options))
        let settings = ProviderSettings(
            name: instance.name, kind: instance.kind, limits: ProviderLimits(concurrency: instance.concurrency),
            options: options)
        return try ProviderFactory.transportSettings(settings)
            .map { DirectTransport(settings: $0) }
    }
}

/// The courier's transports (by route), its calls in flight and the answers it keeps for the
/// daemon.
final class CourierState: Sendable {
    private struct Route {
        var name: String
        var transport: any ProviderTransport
        var calls = 0
        var retired = false
    }

    private let routes = Mutex<[UInt32: Route]>([:])
    /// The version of the instance set in force: an older set arriving late is not applied (the
    /// same one again is: it is idempotent, and reports what still does not load).
    private let version = Mutex<UInt64?>(nil)
    private let counts = Mutex(0)
    private let retained = Mutex<[String: Spool.Entry]>([:])

    var inFlight: Int { counts.withLock { $0 } }
    func started() { counts.withLock { $0 += 1 } }
    func finished() { counts.withLock { $0 -= 1 } }

    /// Makes `instances` the routes from now on, unless a newer set (`version`) is already in
    /// force: new routes get a transport, routes not listed are retired (their transport is shut
    /// down once the calls on it finish). Returns the instances whose settings do not load (they
    /// get no transport, and their calls fail), for the daemon. Runs on the reader thread only.
    func replaceInstances(_ instances: [CourierMessage.Instance], version: UInt64, logger: Logger)
        -> [ProviderConfigurationError]
    {
        let newer = self.version.withLock { current -> Bool in
            guard current.map({ version >= $0 }) ?? true else { return false }
            current = version
            return true
        }
        guard newer else { return [] }
        let known = routes.withLock { Set($0.keys) }
        var made: [UInt32: Route] = [:]
        var unavailable: [ProviderConfigurationError] = []
        for instance in instances where !known.contains(instance.route) {
            do {
                if let transport = try Courier.transport(for: instance) {
                    made[instance.route] = Route(name: instance.name, transport: transport)
                }
            } catch {
                logger.error("courier: provider instance \(instance.name): \(error)")
                unavailable.append(
                    error as? ProviderConfigurationError
                        ?? ProviderConfigurationError(key: "providers.\(instance.name)", problem: "\(error)"))
            }
        }
        let listed = Set(instances.map(\.route))
        let idle = routes.withLock { routes -> [any ProviderTransport] in
            routes.merge(made) { $1 }
            var idle: [any ProviderTransport] = []
            for (route, entry) in routes where !listed.contains(route) {
                if entry.calls == 0 {
                    idle.append(entry.transport)
                    routes[route] = nil
                } else {
                    routes[route]?.retired = true
                }
            }
            return idle
        }
        Self.shutDown(idle)
        return unavailable
    }

    /// The transport of `call`'s route, counted as used by it (pair with `send(_:on:)`); nil when
    /// the route is unknown or retired.
    func take(_ call: CourierMessage.Call) -> (any ProviderTransport)? {
        routes.withLock { routes -> (any ProviderTransport)? in
            guard routes[call.route]?.retired == false else { return nil }
            routes[call.route]?.calls += 1
            return routes[call.route]?.transport
        }
    }

    /// Sends `call` on the transport `take(_:)` returned for it.
    func send(_ call: CourierMessage.Call, on transport: (any ProviderTransport)?) async -> CallResult {
        guard let transport else {
            return .failure(
                ProviderFailure(
                    kind: .misconfigured, code: .courierNoTransport,
                    message: "the courier has no transport for provider instance '\(call.instance)'"))
        }
        defer { leave(call.route) }
        do {
            // The key is the daemon's: the courier keeps the answer itself (`retain`).
            return .answer(try await transport.send(call.request, call: nil))
        } catch {
            return .failure(error)
        }
    }

    /// A call on `route` finished; the last one on a retired route shuts its transport down.
    private func leave(_ route: UInt32) {
        let idle = routes.withLock { routes -> (any ProviderTransport)? in
            routes[route]?.calls -= 1
            guard let entry = routes[route], entry.retired, entry.calls == 0 else { return nil }
            routes[route] = nil
            return entry.transport
        }
        if let idle { Self.shutDown([idle]) }
    }

    private static func shutDown(_ transports: [any ProviderTransport]) {
        guard !transports.isEmpty else { return }
        Task { for transport in transports { try? await transport.shutdown() } }
    }

    /// Keeps the latest answer of a key until the daemon settles it.
    func retain(_ entry: Spool.Entry) { retained.withLock { $0[entry.key] = entry } }
    func settle(_ key: String) {
        var settled = retained.withLock { $0.removeValue(forKey: key) }
        settled?.result.wipe()
    }
    func takeRetained() -> [Spool.Entry] {
        retained.withLock { retained in
            defer { retained = [:] }
            return retained.values.sorted { $0.key < $1.key }
        }
    }

    func shutdown() async {
        let transports = routes.withLock { routes in
            defer { routes = [:] }
            return routes.values.map(\.transport)
        }
        for transport in transports { try? await transport.shutdown() }
    }
}
