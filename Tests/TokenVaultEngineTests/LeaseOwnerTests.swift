import Foundation
import Testing

@testable import TokenVaultEngine

/// When a lease's owner is presumed gone at once (an earlier daemon of this node, whose courier
/// the next daemon waits for) and when its lease must be waited out (any other node).
@Suite struct LeaseOwnerTests {
    /// The pid of a process that has exited and been reaped.
    static func deadPID() throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/true")
        try process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }

    @Test func anEarlierDaemonOfThisNodeIsGoneAtOnce() throws {
        let owner = LeaseOwner(host: "h1", node: "/var/lib/tokenvault")
        let node = LeaseOwner.digest("/var/lib/tokenvault")
        #expect(owner.isGone("h1:\(try Self.deadPID()):abc:\(node)"))
        // An earlier incarnation of this very pid (another nonce) too; this owner itself never.
        #expect(owner.isGone("h1:\(getpid()):abc:\(node)"))
        #expect(!owner.isGone(owner.id))
    }

    @Test func anotherNodesLeaseIsWaitedOutEvenWhenItsProcessIsGone() throws {
        let owner = LeaseOwner(host: "h1", node: "/srv/node-a")
        let other = LeaseOwner.digest("/srv/node-b")
        // Same host, dead pid, but another data directory: its courier may still answer.
        #expect(!owner.isGone("h1:\(try Self.deadPID()):abc:\(other)"))
        // Another host: never presumed gone.
        #expect(!owner.isGone("h2:\(try Self.deadPID()):abc:\(LeaseOwner.digest("/srv/node-a"))"))
        // A live process of this host and node is not gone either.
        #expect(!owner.isGone("h1:1:abc:\(LeaseOwner.digest("/srv/node-a"))"))
    }

    @Test func leasesWrittenBeforeNodesWereNamedAreJudgedByHostAndPid() throws {
        let owner = LeaseOwner(host: "h1", node: "/srv/node-a")
        #expect(owner.isGone("h1:\(try Self.deadPID()):abc"))
        #expect(!owner.isGone("h2:\(try Self.deadPID()):abc"))
        #expect(!owner.isGone("garbage"))
    }

    @Test func theDigestIsStableAndFreeOfSeparators() {
        #expect(LeaseOwner.digest("/var/lib/tokenvault") == LeaseOwner.digest("/var/lib/tokenvault"))
        #expect(LeaseOwner.digest("/a") != LeaseOwner.digest("/b"))
        #expect(!LeaseOwner.digest("a:b").contains(":"))
        #expect(LeaseOwner.digest("") == "cbf29ce484222325")
    }
}
