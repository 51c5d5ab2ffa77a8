import Synchronization
import TokenVaultCore

/// The row a write saved, taken after its commit for `AnswerRetention` (a held write may run
/// more than once; the last run is the one committed).
final class WrittenRecord: Sendable {
    private let record = Mutex<SealedCredentialRecord?>(nil)

    func keep(_ written: SealedCredentialRecord?) { record.withLock { $0 = written } }

    var value: SealedCredentialRecord? { record.withLock { $0 } }
}
