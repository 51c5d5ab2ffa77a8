import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The groups a uid belongs to (primary and supplementary), from the system's user database,
/// cached per uid: `SO_PEERCRED` carries only the primary gid.
final class GroupMembership: Sendable {
    private let cache = Mutex<[UInt32: Set<UInt32>]>([:])

    func groups(uid: UInt32, primaryGID: UInt32) -> Set<UInt32> {
        if let cached = cachedGroups(uid: uid, primaryGID: primaryGID) { return cached }
        let groups = Self.lookUp(uid: uid, primaryGID: primaryGID)
        cache.withLock { $0[uid] = groups }
        return groups
    }

    /// The groups if `uid` was looked up before; nil otherwise. Never touches the user
    /// database, so it may run on an event loop.
    func cachedGroups(uid: UInt32, primaryGID: UInt32) -> Set<UInt32>? {
        cache.withLock { $0[uid] }.map { $0.union([primaryGID]) }
    }

    private static func lookUp(uid: UInt32, primaryGID: UInt32) -> Set<UInt32> {
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
