import ServiceLifecycle

/// The daemon's heartbeat (`LeaseKeeper`), as a `Service`. It comes before the scheduler in the
/// service group, so it stops after it: the leases of refreshes draining at shutdown (and of
/// answers the ledger still holds) stay renewed until they are committed.
public struct LeaseHeartbeat: Service {
    let engine: RefreshEngine

    public init(engine: RefreshEngine) { self.engine = engine }

    public func run() async throws {
        await cancelWhenGracefulShutdown { await engine.keepLeasesAlive() }
    }
}
