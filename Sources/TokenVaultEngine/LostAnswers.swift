import Synchronization

/// The refresh tokens (by fingerprint) this process sent and never heard back about. When the
/// provider later rejects one of them, the credential's reason says an earlier answer was lost
/// (the provider probably rotated the token then), even when another failure came in between:
/// a call the courier could not even send (`courier_unavailable`) replaces the credential's
/// `last_error`, but not this memory. In memory: a restarted daemon knows the same from the
/// attempt it resumes. Bounded: a token leaves when its credential's next answer arrives.
final class LostAnswers: Sendable {
    private let fingerprints = Mutex<Set<String>>([])
    private let capacity: Int

    init(capacity: Int = 100_000) { self.capacity = capacity }

    func contains(_ fingerprint: String) -> Bool { fingerprints.withLock { $0.contains(fingerprint) } }

    /// The answer to a call that presented `fingerprint` was lost.
    func insert(_ fingerprint: String) {
        fingerprints.withLock { set in
            if set.count >= capacity { set.removeAll(keepingCapacity: true) }
            set.insert(fingerprint)
        }
    }

    /// The provider answered a call that presented `fingerprint` (tokens or a verdict).
    func remove(_ fingerprint: String) { _ = fingerprints.withLock { $0.remove(fingerprint) } }
}
