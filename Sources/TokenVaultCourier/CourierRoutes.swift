import Foundation
import Synchronization
import TokenVaultCore

/// Every transport the courier was asked to make and not yet retired, by route, and the version of
/// that set (raised by every change): what a courier is told in its hello and at each reload. A
/// route names one provider object's transport: an instance a reload re-pointed gets a new route,
/// and calls on the old one go out the old way until it is retired.
final class CourierRoutes: Sendable {
    private struct Table {
        var next: UInt32 = 1
        var version: UInt64 = 0
        var instances: [UInt32: CourierMessage.Instance] = [:]
    }

    private let table = Mutex(Table())

    /// The set in force and its version.
    var current: (version: UInt64, instances: [CourierMessage.Instance]) {
        table.withLock { table in (table.version, table.instances.values.sorted { $0.route < $1.route }) }
    }

    /// A new route for `settings`.
    func register(_ settings: ProviderSettings) -> UInt32 {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Encoding a JSON value does not fail; an empty object would leave the instance without
        // TLS settings, which the courier reports.
        let options = (try? encoder.encode(settings.options)).map(Array.init) ?? Array("{}".utf8)
        return table.withLock { table in
            defer {
                table.next += 1
                table.version += 1
            }
            table.instances[table.next] = CourierMessage.Instance(
                route: table.next, name: settings.name, kind: settings.kind,
                concurrency: settings.limits.concurrency, options: options)
            return table.next
        }
    }

    /// Drops `route`; false when it was not there.
    func retire(_ route: UInt32) -> Bool {
        table.withLock { table in
            guard table.instances.removeValue(forKey: route) != nil else { return false }
            table.version += 1
            return true
        }
    }
}
