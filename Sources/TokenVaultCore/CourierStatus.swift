/// The courier as health and metrics show it (the daemon's side of it reports this).
public struct CourierStatus: Sendable, Equatable {
    public var isUp: Bool
    public var pid: Int32?
    public var callsInFlight: Int
    /// Keyed answers the courier holds for this daemon, not settled yet.
    public var unsettled: Int
    /// Couriers started again after one ended unexpectedly.
    public var restarts: Int
    /// Answers found in the spool at start-up, and how many of them were used since.
    public var spooledAtStart: Int
    public var recovered: Int
    /// Spool files that could not be used (torn, foreign, renamed); they stay for the operator.
    public var refusedSpoolFiles: Int

    public init(
        isUp: Bool, pid: Int32?, callsInFlight: Int, unsettled: Int, restarts: Int, spooledAtStart: Int, recovered: Int,
        refusedSpoolFiles: Int
    ) {
        self.isUp = isUp
        self.pid = pid
        self.callsInFlight = callsInFlight
        self.unsettled = unsettled
        self.restarts = restarts
        self.spooledAtStart = spooledAtStart
        self.recovered = recovered
        self.refusedSpoolFiles = refusedSpoolFiles
    }
}
