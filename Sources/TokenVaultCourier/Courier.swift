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
        let state = CourierState(transports: transports(for: hello.instances, logger: logger))
        // The blocking read loop runs on a thread of its own; calls run as tasks.
        let ended = await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                // Stateless between frames (it reads exactly one frame at a time).
                var reader = FrameReader(descriptor: descriptor)
                serve(&reader, writer: writer, state: state, logger: logger)
                done.resume()
            }
            thread.name = "tokenvault-courier-reader"
            thread.start()
        }
        _ = ended
        // The daemon is gone: finish what is in flight, then spool what it never settled.
        while state.inFlight > 0 { try? await Task.sleep(for: .milliseconds(10)) }
        let unsettled = state.takeRetained()
        var spooled = 0
        for entry in unsettled {
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

    private static func serve(_ reader: inout FrameReader, writer: FrameWriter, state: CourierState, logger: Logger) {
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
                Task {
                    let sentAt = Timestamp.now()
                    let result = await state.send(call)
                    if let key = call.key {
                        state.retain(Spool.Entry(key: key, context: call.context, sentAt: sentAt, result: result))
                    }
                    try? writer.send(.answer(id: call.id, result))
                    state.finished()
                }
            case .settle(let key)?: state.settle(key)
            case .hello?, .ready?, .answer?: logger.error("courier: unexpected message from the daemon")
            }
        }
    }

    /// A direct transport per configured instance (TLS settings read here, from the same
    /// configuration); an instance whose settings do not load gets none, and its calls fail.
    static func transports(for instances: [CourierMessage.Instance], logger: Logger) -> [String: any ProviderTransport]
    {
        var transports: [String: any ProviderTransport] = [:]
        for instance in instances {
            do {
                let options = try JSONDecoder().decode([String: JSONValue].self, from: Data(instance.options))
                let settings = ProviderSettings(
                    name: instance.name, kind: instance.kind, limits: ProviderLimits(concurrency: instance.concurrency),
                    options: options)
                if let transport = try ProviderFactory.transportSettings(
                    settings, environment: ProcessInfo.processInfo.environment)
                {
                    transports[instance.name] = DirectTransport(settings: transport)
                }
            } catch {
                logger.error("courier: provider instance \(instance.name): \(error)")
            }
        }
        return transports
    }
}

/// The courier's calls in flight and the answers it keeps for the daemon.
final class CourierState: Sendable {
    private let transports: [String: any ProviderTransport]
    private let counts = Mutex(0)
    private let retained = Mutex<[String: Spool.Entry]>([:])

    init(transports: [String: any ProviderTransport]) { self.transports = transports }

    var inFlight: Int { counts.withLock { $0 } }
    func started() { counts.withLock { $0 += 1 } }
    func finished() { counts.withLock { $0 -= 1 } }

    func send(_ call: CourierMessage.Call) async -> CallResult {
        guard let transport = transports[call.instance] else {
            return .failure(
                ProviderFailure(
                    kind: .misconfigured, code: "courier_no_transport",
                    message: "the courier has no transport for provider instance '\(call.instance)'"))
        }
        do {
            return .answer(try await transport.send(call.request))
        } catch {
            return .failure(error)
        }
    }

    /// Keeps the latest answer of a key until the daemon settles it.
    func retain(_ entry: Spool.Entry) { retained.withLock { $0[entry.key] = entry } }
    func settle(_ key: String) { _ = retained.withLock { $0.removeValue(forKey: key) } }
    func takeRetained() -> [Spool.Entry] {
        retained.withLock { retained in
            defer { retained = [:] }
            return retained.values.sorted { $0.key < $1.key }
        }
    }

    func shutdown() async {
        for transport in transports.values { try? await transport.shutdown() }
    }
}
