import Foundation
import Testing
import TokenVaultCore

@testable import TokenVaultEngine

/// Lease owners are named `<node>/<incarnation>`: an earlier run of this node is gone at once (one
/// daemon per data directory, and it waited for the earlier courier), any other owner is not.
@Suite struct LeaseOwnerTests {
    @Test func anEarlierRunOfThisNodeIsGoneAtOnce() {
        let owner = LeaseOwner(node: "4f1c")
        #expect(owner.id.hasPrefix("4f1c/"))
        #expect(owner.isEarlierRun("4f1c/abc"))
        #expect(!owner.isEarlierRun(owner.id))
    }

    @Test func anotherNodeOrAnOwnerWithoutANodeIsNot() {
        let owner = LeaseOwner(node: "4f1c")
        #expect(!owner.isEarlierRun("77aa/abc"))
        #expect(!owner.isEarlierRun("4f1c2/abc"))
        // Written before nodes had identities (`host:pid:nonce:digest`): judged by silence.
        #expect(!owner.isEarlierRun("4f1c"))
        #expect(!owner.isEarlierRun("h1:123:abc:4f1c"))
        #expect(LeaseName.node(of: "h1:123:abc:4f1c") == "h1:123:abc:4f1c")
    }

    @Test func twoRunsOfOneNodeHaveDifferentNames() {
        #expect(LeaseOwner(node: "n").id != LeaseOwner(node: "n").id)
    }
}
