import Foundation
import TokenVaultCore

/// A `CredentialStore` and `KeyTermStore` in memory, for unit tests of logic above storage.
/// Write transactions work on a copy that replaces the state only when the body returns.
public final class InMemoryStore: CredentialStore, KeyTermStore, @unchecked Sendable {
    struct State {
        var credentials: [CredentialID: SealedCredentialRecord] = [:]
        var terms: [UInt32: WrappedTerm] = [:]
        var settings: [String: String] = [:]
        var audit: [AuditEvent] = []
    }

    private var state = State()
    private let lock = NSLock()

    public init() {}

    public var auditEvents: [AuditEvent] { lock.withLock { state.audit } }

    public func record(_ id: CredentialID) throws -> SealedCredentialRecord? { lock.withLock { state.credentials[id] } }

    public func list(_ query: CredentialQuery) throws -> [CredentialMetadata] {
        lock.withLock {
            state.credentials.values.map(\.metadata)
                .filter { query.namespace == nil || $0.id.namespace == query.namespace }
                .filter { query.status == nil || $0.status == query.status }
                .filter { query.after == nil || $0.id > query.after! }
                .sorted { $0.id < $1.id }
                .prefix(query.limit).map { $0 }
        }
    }

    public func records(after: CredentialID?, limit: Int) throws -> [SealedCredentialRecord] {
        lock.withLock {
            Array(
                state.credentials.values.filter { after == nil || $0.metadata.id > after! }
                    .sorted { $0.metadata.id < $1.metadata.id }.prefix(limit))
        }
    }

    public func records(notSealedWith term: UInt32, limit: Int) throws -> [SealedCredentialRecord] {
        lock.withLock { Array(state.credentials.values.filter { $0.sealTerm != term }.prefix(limit)) }
    }

    public func write<Result>(durability: Durability, _ body: (any CredentialWriter) throws -> Result) throws -> Result
    {
        try lock.withLock {
            let writer = Writer(state: state)
            let result = try body(writer)
            state = writer.state
            return result
        }
    }

    final class Writer: CredentialWriter {
        var state: State
        init(state: State) { self.state = state }

        func record(_ id: CredentialID) throws -> SealedCredentialRecord? { state.credentials[id] }
        func save(_ record: SealedCredentialRecord) throws { state.credentials[record.metadata.id] = record }
        func delete(_ id: CredentialID) throws -> Bool { state.credentials.removeValue(forKey: id) != nil }
        func appendAudit(_ event: AuditEvent) throws { state.audit.append(event) }
    }

    // MARK: KeyTermStore

    public func terms() throws -> [WrappedTerm] { lock.withLock { state.terms.values.sorted { $0.term < $1.term } } }

    public func addActiveTerm(_ term: WrappedTerm) throws {
        lock.withLock {
            for key in state.terms.keys { state.terms[key]?.isActive = false }
            var active = term
            active.isActive = true
            state.terms[term.term] = active
        }
    }

    public func removeTerm(_ term: UInt32) throws -> Bool {
        lock.withLock {
            guard state.terms[term]?.isActive == false,
                !state.credentials.values.contains(where: { $0.sealTerm == term })
            else { return false }
            state.terms[term] = nil
            return true
        }
    }

    public func rewrap(_ terms: [WrappedTerm], settings: [String: String]) throws {
        lock.withLock {
            for term in terms { state.terms[term.term]?.wrappedKey = term.wrappedKey }
            state.settings.merge(settings) { $1 }
        }
    }

    public func termUsage() throws -> [UInt32: Int] {
        lock.withLock {
            var usage: [UInt32: Int] = [:]
            for term in state.terms.keys { usage[term] = state.credentials.values.filter { $0.sealTerm == term }.count }
            return usage
        }
    }

    public func setting(_ key: String) throws -> String? { lock.withLock { state.settings[key] } }
    public func setSettings(_ settings: [String: String]) throws {
        lock.withLock { state.settings.merge(settings) { $1 } }
    }
}
