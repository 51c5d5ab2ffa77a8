/// The readers, and the writers that carry the ledger's transactions side by side (each carries
/// one, so several commits, each waiting for its flush, overlap instead of queueing behind one
/// connection), each lent to one caller at a time.
typealias PostgresLinkPool = ConnectionLender<PostgresLink>

extension ConnectionLender where Connection == PostgresLink {
    /// Whether a connection's last attempt to connect failed moments ago.
    var isRefusing: Bool { connections.contains(where: \.isRefusing) }

    func close() {
        for link in connections { link.close() }
    }
}
