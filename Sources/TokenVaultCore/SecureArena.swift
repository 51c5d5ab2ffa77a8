import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A locked, never-dumped memory region that backs every `SecretBytes`.
///
/// Locking each small secret with its own `mlock` would cost two system calls per secret and,
/// worse, `munlock` works on whole pages, so freeing one secret could unlock a neighbour. One
/// region is locked once instead and carved into power-of-two blocks. When the region is full
/// (or the process may not lock memory), blocks come from `malloc`; they are still zeroed on
/// release, only not locked.
// `base` never changes and every mutable field is behind `state`, so sharing is safe.
final class SecureArena: @unchecked Sendable {
    static let shared = SecureArena(capacity: 4 << 20)

    /// Smallest and largest block sizes served from the region.
    static let minimumBlock = 32
    static let maximumBlock = 64 << 10

    private struct State: ~Copyable {
        var used = 0
        var freeLists: [[Int]] = Array(repeating: [], count: SecureArena.classCount)
    }

    private static let classCount = (maximumBlock / minimumBlock).trailingZeroBitCount + 1
    private let base: UnsafeMutableRawPointer?
    private let capacity: Int
    /// Whether the region is locked in RAM (false when RLIMIT_MEMLOCK forbids it).
    let isLocked: Bool
    private let state = Mutex(State())

    init(capacity: Int) {
        let mapped = mmap(nil, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if let mapped, mapped != MAP_FAILED {
            base = mapped
            self.capacity = capacity
            isLocked = mlock(mapped, capacity) == 0
            #if os(Linux)
                _ = madvise(mapped, capacity, MADV_DONTDUMP)
            #endif
        } else {
            base = nil
            self.capacity = 0
            isLocked = false
        }
    }

    /// A zero-filled block of at least `count` bytes.
    func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        if let base, let sizeClass = Self.sizeClass(for: count) {
            let blockSize = Self.minimumBlock << sizeClass
            let offset: Int? = state.withLock { state in
                if let reused = state.freeLists[sizeClass].popLast() { return reused }
                guard state.used + blockSize <= capacity else { return nil }
                defer { state.used += blockSize }
                return state.used
            }
            if let offset { return base + offset }
        }
        return calloc(1, max(count, 1))!
    }

    /// Zeroes `count` bytes at `pointer` and returns the block.
    func release(_ pointer: UnsafeMutableRawPointer, count: Int) {
        explicit_bzero(pointer, count)
        if let base, pointer >= base, pointer < base + capacity, let sizeClass = Self.sizeClass(for: count) {
            let offset = pointer - base
            state.withLock { $0.freeLists[sizeClass].append(offset) }
        } else {
            free(pointer)
        }
    }

    private static func sizeClass(for count: Int) -> Int? {
        guard count <= maximumBlock else { return nil }
        var size = minimumBlock
        var sizeClass = 0
        while size < count {
            size <<= 1
            sizeClass += 1
        }
        return sizeClass
    }
}
