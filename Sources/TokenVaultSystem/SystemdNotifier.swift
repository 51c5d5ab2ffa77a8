import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The service manager's notification socket (`sd_notify(3)`): `READY=1`, `STATUS=…`,
/// `RELOADING=1`, `STOPPING=1` and `WATCHDOG=1` sent as datagrams to `$NOTIFY_SOCKET`. Without
/// that variable (not started by systemd with `Type=notify`) every send does nothing.
///
/// `take(from:)` reads and removes the variables, so that child processes (the courier) do not
/// talk to the service manager on the daemon's behalf.
public final class SystemdNotifier: Sendable {
    /// The socket's address: a path, or with a leading `@` a name in the abstract namespace.
    public let address: String?
    /// How often the service manager wants `WATCHDOG=1` (`WatchdogSec=`), if it does.
    public let watchdogInterval: Duration?

    public init(address: String?, watchdogInterval: Duration? = nil) {
        self.address = address
        self.watchdogInterval = watchdogInterval
    }

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` (the watchdog is this process's
    /// only when the pid is absent or its own) and removes them from the environment.
    public static func take(from environment: [String: String]) -> SystemdNotifier {
        let address = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        var watchdog: Duration?
        if let text = environment["WATCHDOG_USEC"], let microseconds = Int64(text), microseconds > 0,
            environment["WATCHDOG_PID"].map({ pid_t($0) == getpid() }) ?? true
        {
            watchdog = .microseconds(microseconds)
        }
        for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"] { unsetenv(name) }
        return SystemdNotifier(address: address, watchdogInterval: watchdog)
    }

    /// Sends one notification (`KEY=value` lines). Errors are returned, not thrown: a service
    /// manager that went away must not stop the daemon.
    @discardableResult
    public func send(_ state: String) -> String? {
        guard let address else { return nil }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return String(cString: strerror(errno)) }
        defer { close(descriptor) }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        var path = Array(address.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: socketAddress.sun_path)
        guard path.count < capacity else { return "NOTIFY_SOCKET is too long" }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { raw in
            raw.copyBytes(from: path)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let sent = Array(state.utf8).withUnsafeBytes { bytes in
            withUnsafePointer(to: &socketAddress) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL), $0, length)
                }
            }
        }
        return sent < 0 ? String(cString: strerror(errno)) : nil
    }

    /// `RELOADING=1` with the monotonic time systemd wants next to it (`Type=notify-reload`).
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        send("RELOADING=1\nMONOTONIC_USEC=\(Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000)")
    }
}
