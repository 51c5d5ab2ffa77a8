import Logging
import Synchronization
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultProviders

/// The spool's books on the daemon's side: the answers a courier spooled while no daemon was
/// there, read once a courier is ready (it holds the spool lock only after an earlier courier let
/// go), handed to the call that asks with the same key instead of sending it again, and removed
/// (file included) when the engine settles that key.
final class SpooledAnswers: Sendable {
    private struct Books {
        var entries: [String: Spool.Entry] = [:]
        var atStart = 0
        var recovered = 0
        var refused = 0
    }

    private let spool: Spool
    private let logger: Logger
    private let books = Mutex(Books())

    init(spool: Spool, logger: Logger) {
        self.spool = spool
        self.logger = logger
    }

    var directory: String { spool.directory }

    /// Read at start and after each courier restart; what is found in the spool at load time.
    var counts: (atStart: Int, recovered: Int, refused: Int) {
        books.withLock { ($0.atStart, $0.recovered, $0.refused) }
    }

    /// Reads every spool file; those that do not open are counted and left for the operator.
    func load(_ keyring: Keyring) {
        var entries: [String: Spool.Entry] = [:]
        var refused = 0
        for file in spool.files() {
            do throws(Spool.Refusal) {
                let entry = try spool.read(file) { try keyring.openSpooled($0) }
                entries[entry.key] = entry
            } catch {
                refused += 1
                logger.error(
                    "\(error); it is left in place, unused", metadata: ["tokenvault.spool": "\(spool.directory)"])
            }
        }
        if !entries.isEmpty {
            logger.notice(
                "\(entries.count) provider answer(s) found in the spool; they are committed as their calls resume")
        }
        books.withLock { books in
            books.entries = entries
            books.atStart = entries.count
            books.refused = refused
        }
    }

    /// The spooled answer of `key`, if there is one, with the time its request was sent. It stays
    /// until settled: a call that fails to commit it asks again.
    func answer(for key: String) throws(ProviderFailure) -> HTTPAnswer? {
        guard
            let entry = books.withLock({ books -> Spool.Entry? in
                guard let entry = books.entries[key] else { return nil }
                books.recovered += 1
                return entry
            })
        else { return nil }
        logger.notice("answer recovered from the spool", metadata: ["tokenvault.call.key": "\(key)"])
        var answer = try entry.result.get()
        answer.sentAt = entry.sentAt
        return answer
    }

    /// The engine no longer needs `key`'s answer: forgotten, and its file removed.
    func settle(_ key: String) {
        guard books.withLock({ $0.entries.removeValue(forKey: key) != nil }) else { return }
        do {
            try spool.remove(key)
        } catch {
            logger.error("a committed spooled answer could not be removed: \(error)")
        }
    }

    /// Spooled answers whose key starts with `prefix`, with their calls' contexts.
    func keys(prefix: String) -> [(key: String, context: SecretBytes?)] {
        books.withLock { books in
            books.entries.values.filter { $0.key.hasPrefix(prefix) }.sorted { $0.key < $1.key }.map {
                ($0.key, $0.context)
            }
        }
    }
}
