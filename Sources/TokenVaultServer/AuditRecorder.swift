import Logging
import ServiceLifecycle
import Synchronization
import TokenVaultCore

/// Collects audit rows and writes them in batches (one transaction per flush), so that auditing
/// every token read does not cost a commit per request. Runs as a service; on shutdown it
/// flushes what is left. A crash loses at most one flush interval of read audits; writes of
/// credentials carry their audit row in their own transaction instead.
public final class AuditRecorder: Service, Sendable {
    private let pending = Mutex<[AuditEvent]>([])
    private let store: any AdminStore
    private let interval: Duration
    private let logger: Logger

    public init(store: any AdminStore, interval: Duration = .milliseconds(250), logger: Logger) {
        self.store = store
        self.interval = interval
        self.logger = logger
    }

    public func record(_ event: AuditEvent) {
        pending.withLock { $0.append(event) }
    }

    public func run() async throws {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await Task.sleep(for: interval)
            await flush()
        }
        await flush()
    }

    /// Writes every pending row now. When it returns, every row recorded before the call is
    /// committed, even one a concurrent flush had taken: flushes run one at a time.
    public func flush() async {
        do {
            try await BlockingWork.run { [self] in try writePending() }
        } catch {
            logger.error("could not write audit rows", metadata: ["error": "\(error)"])
        }
    }

    /// Held while a flush writes; its value is the spare buffer, so the two buffers swap places
    /// and a flush never allocates (or copies) while holding `pending`, which the event loops
    /// append to on every token read.
    private let writing = Mutex<[AuditEvent]>([])

    private func writePending() throws {
        try writing.withLock { spare in
            var batch: [AuditEvent] = []
            swap(&batch, &spare)
            pending.withLock { swap(&$0, &batch) }
            defer {
                batch.removeAll(keepingCapacity: true)
                swap(&batch, &spare)
            }
            guard !batch.isEmpty else { return }
            do {
                try store.appendAudits(batch)
            } catch {
                throw VaultError.storage("\(batch.count) audit rows not written: \(error)")
            }
        }
    }
}
