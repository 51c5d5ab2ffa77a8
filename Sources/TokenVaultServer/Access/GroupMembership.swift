import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The groups a uid belongs to (primary and supplementary), from the system's user database:
/// `SO_PEERCRED` carries only the primary gid. Remembered per uid for `refreshAfter` seconds,
/// then read again, so a user added to or removed from a group is seen without a restart. The
/// lookup (`getpwuid_r`, `getgrouplist`: NSS, possibly LDAP over the network) runs on the
/// blocking pool, never on the concurrency pool or an event loop.
final class GroupMembership: Sendable {
    private struct Entry {
        let groups: Set<UInt32>
        let readAt: ContinuousClock.Instant
    }

    private let cache = Mutex<[UInt32: Entry]>([:])
    let refreshAfter: Duration
    /// The user database read (tests give their own, to take a group away).
    private let lookUp: @Sendable (_ uid: UInt32, _ primaryGID: UInt32) -> Set<UInt32>

    init(
        refreshAfter: Duration = .seconds(60),
        lookUp: @escaping @Sendable (_ uid: UInt32, _ primaryGID: UInt32) -> Set<UInt32> = GroupMembership.systemLookUp
    ) {
        self.refreshAfter = refreshAfter
        self.lookUp = lookUp
    }

    func groups(uid: UInt32, primaryGID: UInt32) async throws -> Set<UInt32> {
        if let cached = cachedGroups(uid: uid, primaryGID: primaryGID) { return cached }
        let groups = try await BlockingWork.run { [lookUp] in lookUp(uid, primaryGID) }
        cache.withLock { $0[uid] = Entry(groups: groups, readAt: .now) }
        return groups
    }

    /// The groups if `uid` was looked up less than `refreshAfter` ago; nil otherwise. Never
    /// touches the user database, so it may run on an event loop.
    func cachedGroups(uid: UInt32, primaryGID: UInt32) -> Set<UInt32>? {
        guard let entry = cache.withLock({ $0[uid] }), ContinuousClock.now - entry.readAt < refreshAfter else {
            return nil
        }
        return entry.groups.union([primaryGID])
    }

    /// `getpwuid_r` and `getgrouplist`.
    static func systemLookUp(uid: UInt32, primaryGID: UInt32) -> Set<UInt32> {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name
        else {
            return [primaryGID]
        }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, primaryGID, &groups, &count) == -1 {
            groups = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(name, primaryGID, &groups, &count)
        }
        return Set(groups.prefix(Int(max(count, 0)))).union([primaryGID])
    }
}
