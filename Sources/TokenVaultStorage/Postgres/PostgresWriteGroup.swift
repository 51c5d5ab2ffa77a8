import PostgresNIO
import TokenVaultCore

/// What one transaction of a group commit read ahead for the credentials its writes claimed, and
/// the writes it keeps back to send together (`PostgresCredentialWriter.prefetch`).
///
/// A claimed credential is locked and read once for the whole group; the group's writes read it
/// from here and their changes to it are applied here as the database will apply them. Each
/// change that has an answer (did the attempt close, did the schedule apply) is answered from
/// here and checked against what the database says when the changes are sent, before the
/// commit: a difference splits the group (`WriteGroupSplit`), never commits it.
struct PostgresWriteGroup {
    struct Entry {
        /// Another transaction held the credential's lock when it was claimed (claims never
        /// wait): this one does not hold it, and reads it as a write alone would.
        var busy: Bool
        var row: SealedCredentialRecord?
        var openAttempt: RefreshAttempt?
    }

    /// A change kept back, with the answer it was given.
    enum Change {
        case save(SealedCredentialRecord)
        case beginAttempt(RefreshAttempt)
        case closeAttempt(attemptID: String, owner: String, credential: CredentialID, closes: Bool)
        case schedule(ScheduleUpdate, applies: Bool)
    }

    private enum Table { case credentials, attempts }

    private struct Key: Hashable {
        let table: Table
        let id: CredentialID
    }

    private(set) var entries: [CredentialID: Entry]
    private(set) var changes: [Change] = []
    /// Which rows have a change kept back: a second change to one sends the first before it, so
    /// that the changes sent together never touch a row twice.
    private var keys: Set<Key> = []
    /// The running write's start (`beginWrite`) and the entries as they were before it changed
    /// them, to undo it alone if it throws before anything of it reached the database.
    private var mark = 0
    private var undo: [(CredentialID, Entry)] = []

    init(entries: [CredentialID: Entry]) { self.entries = entries }

    /// Whether this transaction holds any claimed credential's lock.
    var holdsLocks: Bool { entries.values.contains { !$0.busy } }

    /// The entry of a credential this transaction locked.
    func locked(_ id: CredentialID) -> Entry? {
        guard let entry = entries[id], !entry.busy else { return nil }
        return entry
    }

    /// The credential whose open attempt is `attemptID`, among those this transaction locked.
    func credential(withOpenAttempt attemptID: String) -> CredentialID? {
        entries.first { !$0.value.busy && $0.value.openAttempt?.attemptID == attemptID }?.key
    }

    mutating func beginWrite() {
        mark = changes.count
        undo = []
    }

    /// Undoes the running write's changes (none of which was sent).
    mutating func rollBackWrite() {
        for (id, entry) in undo.reversed() { entries[id] = entry }
        for change in changes[mark...] { keys.remove(Self.key(of: change)) }
        changes.removeLast(changes.count - mark)
        undo = []
    }

    /// Whether keeping `change` back needs the changes kept so far sent first.
    func mustSendBefore(_ change: Change) -> Bool { keys.contains(Self.key(of: change)) }

    mutating func keep(_ change: Change, _ id: CredentialID, applying apply: (inout Entry) -> Void) {
        changes.append(change)
        keys.insert(Self.key(of: change))
        update(id, apply)
    }

    /// Changes an entry (a change that was not kept back but ran at once).
    mutating func update(_ id: CredentialID, _ apply: (inout Entry) -> Void) {
        guard var entry = entries[id] else { return }
        undo.append((id, entry))
        apply(&entry)
        entries[id] = entry
    }

    /// Drops an entry: its credential is read from the database from now on.
    mutating func forget(_ id: CredentialID) { entries[id] = nil }

    mutating func takeChanges() -> [Change] {
        defer {
            changes = []
            keys = []
            mark = 0
            undo = []
        }
        return changes
    }

    private static func key(of change: Change) -> Key {
        switch change {
        case .save(let record): Key(table: .credentials, id: record.metadata.id)
        case .schedule(let update, _): Key(table: .credentials, id: update.id)
        case .beginAttempt(let attempt): Key(table: .attempts, id: attempt.credentialID)
        case .closeAttempt(_, _, let credential, _): Key(table: .attempts, id: credential)
        }
    }
}
