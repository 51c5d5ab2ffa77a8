import NIOCore
import Synchronization
import TokenVaultSystem

/// Sends `WATCHDOG=1` (systemd `WatchdogSec=`) only while the event loops that serve requests
/// are running their tasks: each loop stamps a heartbeat every quarter of the watchdog interval, and the
/// first loop pings when every loop has stamped since its last ping. A loop stuck in a blocking
/// call stops the pings, and systemd restarts the daemon.
public final class EventLoopWatchdog: Sendable {
    private let notifier: SystemdNotifier
    private let beats: Mutex<[Bool]>
    private let tasks: Mutex<[RepeatedTask]> = Mutex([])

    private init(notifier: SystemdNotifier, loops: Int) {
        self.notifier = notifier
        beats = Mutex(Array(repeating: false, count: loops))
    }

    /// Starts the pings when the service manager asked for them (`WATCHDOG_USEC`); nil otherwise.
    public static func start(notifier: SystemdNotifier, group: any EventLoopGroup) -> EventLoopWatchdog? {
        guard let interval = notifier.watchdogInterval else { return nil }
        let loops = Array(group.makeIterator())
        let watchdog = EventLoopWatchdog(notifier: notifier, loops: loops.count)
        // A quarter of the interval: the first loop may have to wait one more round for the others,
        // and a ping still comes within half the interval.
        let period = TimeAmount(interval / 4)
        let scheduled = loops.enumerated().map { index, loop in
            loop.scheduleRepeatedTask(initialDelay: .zero, delay: period) { _ in watchdog.beat(index) }
        }
        watchdog.tasks.withLock { $0 = scheduled }
        return watchdog
    }

    private func beat(_ index: Int) {
        let allBeat = beats.withLock { beats -> Bool in
            beats[index] = true
            guard index == 0, !beats.contains(false) else { return false }
            beats = Array(repeating: false, count: beats.count)
            return true
        }
        if allBeat { notifier.send("WATCHDOG=1") }
    }

    public func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}
