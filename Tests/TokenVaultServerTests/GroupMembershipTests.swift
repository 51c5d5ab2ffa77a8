import Foundation
import Testing
import TokenVaultTesting

@testable import TokenVaultServer

/// A uid's groups are looked up off the concurrency pool, remembered for the configured time,
/// and looked up again after it, so a membership change is seen without a restart.
@Suite struct GroupMembershipTests {
    @Test func groupsAreRememberedThenReadAgain() async throws {
        let membership = GroupMembership(refreshAfter: .milliseconds(200))
        let uid = getuid()
        let gid = getgid()
        #expect(membership.cachedGroups(uid: uid, primaryGID: gid) == nil, "nothing is known before a lookup")
        let groups = try await membership.groups(uid: uid, primaryGID: gid)
        #expect(groups.contains(gid))
        #expect(membership.cachedGroups(uid: uid, primaryGID: gid) == groups)
        // Once the 200 ms are up, the event loop must not use stale groups.
        #expect(try await waitUntil { membership.cachedGroups(uid: uid, primaryGID: gid) == nil })
        #expect(try await membership.groups(uid: uid, primaryGID: gid) == groups)
        #expect(membership.cachedGroups(uid: uid, primaryGID: gid) == groups)
    }

    /// A uid the user database does not know still has its primary gid (from `SO_PEERCRED`).
    @Test func anUnknownUidHasItsPrimaryGroup() async throws {
        let membership = GroupMembership()
        #expect(try await membership.groups(uid: 4_000_000_001, primaryGID: 4_000_000_002) == [4_000_000_002])
    }
}
