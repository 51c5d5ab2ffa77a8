import Foundation
import Logging
import Synchronization
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultProviders
import TokenVaultSystem

/// The daemon's side of the courier: starts it (and starts it again if it dies) and sends every
/// provider call through it (the transports its `transportMaker` makes). What it keeps apart:
/// the routes those transports are (`CourierRoutes`) and the spool's books (`SpooledAnswers`:
/// the answers a courier spooled while no daemon was there, settled once safe).
///
/// Start-up: the new courier first waits for the spool lock, so a courier of an earlier daemon
/// that is still finishing its calls gets to spool them; only then does it say `ready`, and only
/// then is the spool read. A call made with a key whose answer is in the spool gets that answer
/// instead of being sent again (the refresh token it carries was spent by the first send).
/// The daemon does not wait for that to serve: calls wait (`send`), and so does the engine's
/// recovery of the spool (`waitUntilReady`), while token reads go on from what is stored.
public final class CourierClient: AnswerSettlement, Sendable {
    private struct State {
        var connection: CourierConnection?
        /// The spool is read: a call may be sent (its answer is not in the spool).
        var ready = false
        /// Start-up failed: calls fail instead of waiting.
        var failed = false
        var readyWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// A courier being started that has not said `ready` (it may wait for an earlier one).
        var launchingChild: ChildProcess?
        var stopping = false
        var restarts = 0
        var unsettled: Set<String> = []
        /// Set while a courier is being started: who waits to publish instances to it.
        var launching: [CheckedContinuation<CourierConnection?, Never>]?
    }

    private let spooled: SpooledAnswers
    private let routes = CourierRoutes()
    private let arguments: [String]
    private let logger: Logger
    private let readyTimeout: Double
    private let state = Mutex(State())
    private let spoolPublicKey = Mutex<[UInt8]?>(nil)
    /// Opens the spool again after a courier was restarted (what the ended one spooled).
    private let keyring = Mutex<Keyring?>(nil)
    /// How long a running courier may take to confirm an instance set (`publishInstances`).
    private let instancesTimeout: Double

    /// Made before the vault is opened (providers are built with its `transportMaker`), started
    /// once it is (`start(keyring:)`).
    /// - Parameters:
    ///   - arguments: how this binary is started as a courier (`["courier", …]`).
    ///   - readyTimeout: how long to wait for a courier of an earlier daemon to finish.
    public init(
        spool: Spool, arguments: [String], readyTimeout: Double, instancesTimeout: Double = 10, logger: Logger
    ) {
        spooled = SpooledAnswers(spool: spool, logger: logger)
        self.instancesTimeout = instancesTimeout
        self.arguments = arguments
        self.readyTimeout = readyTimeout
        self.logger = logger
    }

    /// Starts the courier and reads the spool with the vault's keyring. The courier learns the
    /// provider instances whose transports were made so far (it reads their TLS settings itself).
    /// Throws when no courier can be started: a daemon without one would lose answers it promised
    /// to keep.
    public func start(keyring: Keyring) async throws {
        do {
            guard let publicKey = keyring.spoolPublicKey else {
                throw VaultError.integrity(
                    "this vault has no spool key; open it once with this version to create one")
            }
            spoolPublicKey.withLock { $0 = publicKey }
            self.keyring.withLock { $0 = keyring }
            guard try await launch() else {
                throw VaultError(
                    code: .internalError,
                    message: "the courier did not start within \(Int(readyTimeout)) s (is a courier of an earlier "
                        + "daemon still finishing? see \(spooled.directory)/courier.lock)")
            }
            spooled.load(keyring)
        } catch {
            becomeReady(false)
            throw error
        }
        becomeReady(true)
    }

    /// Returns once `start` has read the spool (true), or failed (false).
    public func waitUntilReady() async -> Bool { await isReady() }

    /// Whether a courier of an earlier daemon holds the spool (it is finishing its calls): a
    /// courier started now waits for it. Asked before `start`, which takes that lock itself.
    public var earlierCourierHoldsTheSpool: Bool { FileLock.isHeld(spooled.directory + "/courier.lock") }

    /// Whether the spool was read (false: start-up failed, the daemon is stopping first, or the
    /// waiting task was cancelled).
    private func isReady() async -> Bool {
        // Every provider call asks: once ready, without a continuation.
        if state.withLock({ $0.ready }) { return true }
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool? in
                    if state.ready { return true }
                    if state.failed || state.stopping || Task.isCancelled { return false }
                    state.readyWaiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.readyWaiters.removeValue(forKey: id) }?.resume(returning: false)
        }
    }

    private func becomeReady(_ ready: Bool) {
        let waiters = state.withLock { state in
            state.ready = ready
            state.failed = !ready
            defer { state.readyWaiters = [:] }
            return state.readyWaiters.values
        }
        for waiter in waiters { waiter.resume(returning: ready) }
    }

    /// Tells the running courier the instances from now on (a reload: transports made since the
    /// last time are added, shut-down ones retired) and waits for its answer. A courier being
    /// started is waited for (it may have read the set for its hello before the latest change).
    /// Returns the instances it could not make a transport for, with their keys, or a problem
    /// naming the courier when it did not answer in time; empty when all are ready or no courier
    /// runs (one started later learns them in its hello). Sets published concurrently may reach
    /// the courier out of order: each carries its version, and the courier keeps the newest.
    public func publishInstances() async -> [ProviderConfigurationError] {
        guard let connection = await connectionToPublishTo() else { return [] }
        let (version, instances) = routes.current
        switch await connection.replaceInstances(version: version, instances, timeout: instancesTimeout) {
        case .ready(let unavailable):
            return unavailable.map { .init(key: $0.key, problem: "the courier cannot use it: \($0.problem)") }
        case .ended: return []
        case .timedOut:
            logger.error(
                "the courier did not confirm the provider instances",
                metadata: ["tokenvault.courier.pid": "\(connection.child.pid)"])
            return [
                ProviderConfigurationError(
                    key: "providers",
                    problem: "the courier (pid \(connection.child.pid)) did not confirm the provider instances "
                        + "within \(Int(instancesTimeout)) s")
            ]
        }
    }

    /// The running courier, or the one being started once it runs (nil if it does not start).
    private func connectionToPublishTo() async -> CourierConnection? {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> CourierConnection?? in
                if let connection = state.connection { return .some(connection) }
                guard state.launching != nil else { return .some(nil) }
                state.launching?.append(continuation)
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
    }

    /// A provider object was shut down: the courier drops its transport (after its calls finish).
    func retire(_ route: UInt32) async {
        guard routes.retire(route) else { return }
        _ = await publishInstances()
    }

    /// Closes the courier's connection and waits for it to exit (it spools whatever is unsettled).
    public func stop() async {
        let (connection, waiters, launching) = state.withLock { state in
            state.stopping = true
            defer { state.readyWaiters = [:] }
            return (state.connection, state.readyWaiters.values, state.launchingChild)
        }
        for waiter in waiters { waiter.resume(returning: false) }
        // A courier still waiting for an earlier one holds nothing yet: it ends now, and the
        // start fails (the earlier courier goes on spooling).
        launching?.signal(SIGKILL)
        guard let connection else { return }
        connection.close()
        let child = connection.child
        _ = await Task.detached { child.wait() }.value
    }

    /// How requests to `instance` leave: through the courier.
    public var transportMaker: TransportMaker {
        { [self] settings, _ in
            CourierTransport(client: self, instance: settings.name, route: routes.register(settings))
        }
    }

    public var status: CourierStatus {
        let counts = spooled.counts
        return state.withLock { state in
            CourierStatus(
                isUp: state.connection != nil, pid: state.connection?.child.pid,
                callsInFlight: state.connection?.calls ?? 0, unsettled: state.unsettled.count,
                restarts: state.restarts, spooledAtStart: counts.atStart, recovered: counts.recovered,
                refusedSpoolFiles: counts.refused)
        }
    }

    // MARK: AnswerSettlement

    public func settle(_ key: String) {
        let connection = state.withLock { state in
            state.unsettled.remove(key)
            return state.connection
        }
        spooled.settle(key)
        connection?.settle(key)
    }

    public func spooled(prefix: String) -> [(key: String, context: SecretBytes?)] { spooled.keys(prefix: prefix) }

    // MARK: Calls

    /// Sends `request` on `route`; a keyed `call` whose answer the spool holds gets that answer
    /// (with the time its request was sent) instead of sending again.
    func send(route: UInt32, instance: String, request: PreparedRequest, call: ProviderCall?)
        async throws(ProviderFailure) -> HTTPAnswer
    {
        // Not before the spool is read: the answer to this call may be in it (its request spent
        // what it carried), and sending it again would present that a second time.
        guard await isReady() else { throw ProviderFailure.courierNotReady }
        if let call, let answer = try spooled.answer(for: call.key) { return answer }
        guard let connection = await liveConnection() else { throw ProviderFailure.courierUnavailable }
        if let key = call?.key { _ = state.withLock { $0.unsettled.insert(key) } }
        return try await connection.call(
            key: call?.key, context: call?.context, route: route, instance: instance, request: request
        ).get()
    }

    /// The running courier; waits up to 10 s while one is being restarted.
    private func liveConnection() async -> CourierConnection? {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let (connection, stopping) = state.withLock { ($0.connection, $0.stopping) }
            if let connection { return connection }
            guard !stopping, ContinuousClock.now < deadline else { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    // MARK: Process

    private func launch() async throws -> Bool {
        // From before the hello's instance set is read until the connection is in place, a
        // publish waits for this courier instead of finding none and missing it.
        state.withLock { $0.launching = $0.launching ?? [] }
        var started: CourierConnection?
        defer {
            let waiting = state.withLock { state in
                if let started { state.connection = started }
                defer { state.launching = nil }
                return state.launching ?? []
            }
            for continuation in waiting { continuation.resume(returning: started) }
        }
        let child: ChildProcess
        do {
            child = try ChildProcess.spawnSelf(
                arguments: arguments, environment: Self.courierEnvironment(ProcessInfo.processInfo.environment))
        } catch {
            throw VaultError(code: .internalError, message: "cannot start the courier: \(error)")
        }
        state.withLock { $0.launchingChild = child }
        defer { state.withLock { $0.launchingChild = nil } }
        let connection = CourierConnection(child: child) { [self] ended in courierEnded(ended) }
        let hello = spoolPublicKey.withLock { $0 }.map { key in
            let (version, instances) = routes.current
            return CourierMessage.Hello(spoolPublicKey: key, version: version, instances: instances)
        }
        guard let hello, await connection.handshake(hello, timeout: readyTimeout) else {
            connection.close()
            child.signal(SIGKILL)
            _ = await Task.detached { child.wait() }.value
            return false
        }
        // Published under the same lock `stop` reads it with: a daemon that began to stop while
        // this courier waited for an earlier one ends it here, or `stop` finds and ends it.
        let stopping = state.withLock { state in
            if !state.stopping { state.connection = connection }
            return state.stopping
        }
        if stopping {
            connection.close()
            _ = await Task.detached { child.wait() }.value
            return false
        }
        started = connection
        logger.info("courier started", metadata: ["tokenvault.courier.pid": "\(child.pid)"])
        return true
    }

    /// The courier's environment: what a process needs to run, resolve names, find CA bundles and
    /// log to the journal, and nothing of the daemon's own (`CREDENTIALS_DIRECTORY`,
    /// `TOKENVAULT_*`, anything a secret could be passed in). It reads no client secret: its
    /// transports come from the instances' transport options alone.
    static func courierEnvironment(_ environment: [String: String]) -> [String] {
        let kept: Set<String> = [
            "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "JOURNAL_STREAM", "SSL_CERT_FILE", "SSL_CERT_DIR",
            "RES_OPTIONS", "LOCALDOMAIN", "HOSTALIASES", "LD_LIBRARY_PATH",
        ]
        return environment.filter { kept.contains($0.key) }.map { "\($0.key)=\($0.value)" }.sorted()
    }

    /// The courier ended: expected when the daemon stops, a failure otherwise (its calls in flight
    /// were failed as unknown outcomes); a new one is started.
    private func courierEnded(_ connection: CourierConnection) {
        let restart = state.withLock { state -> Bool in
            // A courier that never became the current one (a failed start) is not restarted here.
            guard state.connection === connection else { return false }
            state.connection = nil
            // What the dead courier held is gone; the engine resumes those calls as it does
            // after any lost answer.
            state.unsettled = []
            return !state.stopping
        }
        guard restart else { return }
        Task.detached { [self] in
            let status = connection.child.wait()
            logger.error(
                "the courier exited unexpectedly; starting a new one",
                metadata: [
                    "tokenvault.courier.pid": "\(connection.child.pid)", "tokenvault.courier.status": "\(status)",
                ])
            var delay = 0.1
            while !state.withLock({ $0.stopping }) {
                state.withLock { $0.restarts += 1 }
                if (try? await launch()) == true {
                    // The new courier said ready only once the ended one had spooled what it held
                    // and released the spool: those answers are substituted when their calls resume.
                    if let keyring = keyring.withLock({ $0 }) { spooled.load(keyring) }
                    return
                }
                try? await Task.sleep(for: .seconds(delay))
                delay = min(delay * 2, 5)
            }
        }
    }
}

extension CallResult {
    func get() throws(ProviderFailure) -> HTTPAnswer {
        switch self {
        case .answer(let answer): return answer
        case .failure(let failure): throw failure
        }
    }
}
