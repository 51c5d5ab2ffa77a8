import CProcess
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What every `posix_spawn` of ours shares: the child inherits no descriptor beyond the ones
/// its spawner placed. SwiftNIO opens sockets without close-on-exec, so without this a helper
/// (the courier, an external signer) would hold the daemon's listening socket and database
/// connections, and keep them alive after the daemon closed them or died.
public enum SpawnActions {
    /// Adds to `actions`: close every descriptor from `first` up in the child (glibc 2.34+;
    /// otherwise each one open here now, listed from /proc/self/fd).
    public static func closeDescriptors(from first: Int32, _ actions: inout posix_spawn_file_actions_t) {
        if tokenvault_spawn_close_from(&actions, first) == 0 { return }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap({ Int32($0) }) where descriptor >= first {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }
}
