import Foundation
import TokenVaultCore

/// Names this daemon in the refresh journal's leases: `<node>/<incarnation>` (`LeaseName`), the
/// node being the data directory's identity (random, created once: two containers with the same
/// host name and path are still two nodes) and the incarnation this run of the daemon.
struct LeaseOwner: Sendable {
    let node: String
    let incarnation: String
    let id: String

    init(node: String) {
        self.node = node
        incarnation = String(UInt64.random(in: .min ... .max), radix: 16)
        id = LeaseName.owner(node: node, incarnation: incarnation)
    }

    /// An earlier run of this node: gone for certain. One daemon serves a data directory at a
    /// time (the vault's lock), and it starts only after the earlier daemon's courier, which may
    /// still have been delivering an answer, has finished and spooled it.
    func isEarlierRun(_ owner: String) -> Bool {
        owner != id && owner.contains("/") && LeaseName.node(of: owner) == node
    }
}
