import Foundation
import Synchronization
import TokenVaultCore
import TokenVaultSystem

/// The rows this node committed with new tokens, kept in `<data-dir>/retained` for `retention`
/// seconds after each commit (`AnswerRetention`), to be written back if a failover loses them.
///
/// Append-only segment files, one per `segmentSeconds`, named `<first commit, ms>.log`; a
/// segment is deleted whole once its last commit is older than the retention period. The file
/// `reconciled` holds the database timeline the node last wrote back what it kept for. Each entry is the row exactly as the
/// database got it: its metadata and its envelopes, sealed with the vault's key as in the
/// database, so nothing here opens without the master key. Appends are not flushed to the disk
/// one by one: the entries outlive the daemon (a SIGKILL, a crash), not a power loss of the host.
///
/// Entry: a `WireWriter` byte string (its length, 4 bytes big-endian, then the bytes) holding
/// `tokenvault.retained.v1`, the metadata, the term, the four envelopes and the credential's grant
/// (JSON; an entry written before grants existed ends after the envelopes).
public final class RetainedAnswers: AnswerRetention {
    public let directory: String
    /// Seconds an entry is kept after its commit.
    public let retention: Double
    let segmentSeconds: Double
    private let clock: any VaultClock
    private let state = Mutex(State())

    private struct State {
        var open: (name: String, handle: Int32, startedAt: Timestamp)?
        var failures = 0
    }

    static let magic = Array("tokenvault.retained.v1\u{0}".utf8)
    static let suffix = ".log"

    public init(directory: String, retention: Double, clock: any VaultClock = SystemClock()) {
        self.directory = directory
        self.retention = retention
        segmentSeconds = max(1, min(60, retention / 4))
        self.clock = clock
    }

    deinit { state.withLock { if let open = $0.open { close(open.handle) } } }

    /// A failed append is counted, never thrown: the commit it follows has happened.
    public var failedAppends: Int { state.withLock { $0.failures } }

    public func retain(_ record: SealedCredentialRecord) {
        var writer = WireWriter()
        writer.data(Self.magic)
        Self.write(record, to: &writer)
        var framed = WireWriter()
        framed.data(writer.bytes)
        writer.wipe()
        var entry = framed.bytes
        framed.wipe()
        defer { entry.wipe() }
        let now = clock.now
        state.withLock { state in
            if let open = state.open, now.seconds - open.startedAt.seconds >= segmentSeconds {
                close(open.handle)
                state.open = nil
            }
            if state.open == nil {
                let name = "\(now.milliseconds)" + Self.suffix
                try? DurableFile.makeDirectory(directory)
                let handle = Glibc.open(directory + "/" + name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
                guard handle >= 0 else {
                    state.failures += 1
                    return
                }
                state.open = (name, handle, now)
            }
            let written = entry.withUnsafeBytes { Glibc.write(state.open!.handle, $0.baseAddress, $0.count) }
            if written != entry.count {
                // A short write would leave a torn entry mid-file: the next one starts a new file.
                state.failures += 1
                close(state.open!.handle)
                state.open = nil
            }
        }
    }

    public var reconciledTimeline: Int64? {
        FileManager.default.contents(atPath: directory + "/" + Self.reconciledFile)
            .flatMap { Int64(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    public func markReconciled(_ timeline: Int64) throws {
        try DurableFile.makeDirectory(directory)
        try DurableFile.write(Array("\(timeline)\n".utf8), to: Self.reconciledFile, in: directory)
    }

    static let reconciledFile = "reconciled"

    public func retained() throws -> [SealedCredentialRecord] {
        let segments = segments()
        var newest: [CredentialID: SealedCredentialRecord] = [:]
        for segment in segments {
            guard let bytes = FileManager.default.contents(atPath: directory + "/" + segment.name).map(Array.init)
            else { continue }
            var entries = WireReader(bytes)
            // A torn last entry (the daemon died mid-append) ends the segment.
            while !entries.isAtEnd, let entry = try? entries.data() {
                var reader = WireReader(entry)
                guard (try? reader.data()) == Self.magic, let record = try? Self.read(from: &reader) else { continue }
                if let kept = newest[record.metadata.id], kept.metadata.createdAt == record.metadata.createdAt,
                    kept.metadata.generation > record.metadata.generation
                {
                    continue
                }
                newest[record.metadata.id] = record
            }
        }
        return newest.values.sorted { $0.metadata.id < $1.metadata.id }
    }

    public func prune() {
        let cutoff = clock.now.milliseconds - Int64(retention * 1000)
        let segments = segments()
        // A segment's last entry is older than the next segment's start; the last segment's is
        // its file's modification time.
        for (index, segment) in segments.enumerated() {
            let endedAt = index + 1 < segments.count ? segments[index + 1].startedAt : lastWrite(segment.name)
            guard endedAt < cutoff else { continue }
            state.withLock { state in
                if let open = state.open, open.name == segment.name {
                    close(open.handle)
                    state.open = nil
                }
                try? DurableFile.remove(segment.name, in: directory)
            }
        }
    }

    private func lastWrite(_ name: String) -> Int64 {
        let modified = try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.modificationDate]
        return (modified as? Date).map { Int64($0.timeIntervalSince1970 * 1000) } ?? Int64.max
    }

    private struct Segment {
        var name: String
        var startedAt: Int64
    }

    /// The segment files present, oldest first.
    private func segments() -> [Segment] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).compactMap { name in
            guard name.hasSuffix(Self.suffix), let startedAt = Int64(name.dropLast(Self.suffix.count)) else {
                return nil
            }
            return Segment(name: name, startedAt: startedAt)
        }.sorted { ($0.startedAt, $0.name) < ($1.startedAt, $1.name) }
    }

    // MARK: Entries

    static func write(_ record: SealedCredentialRecord, to writer: inout WireWriter) {
        let metadata = record.metadata
        writer.string(metadata.id.description)
        writer.string(metadata.provider)
        writer.string(metadata.kind.rawValue)
        writer.optional(metadata.subject) { $0.string($1) }
        writer.string(metadata.status.rawValue)
        writer.i64(metadata.generation)
        writer.optional(metadata.tokenType) { $0.string($1) }
        writer.u32(UInt32(metadata.scopes.count))
        for scope in metadata.scopes { writer.string(scope) }
        writer.u32(UInt32(metadata.labels.count))
        for (key, value) in metadata.labels.sorted(by: { $0.key < $1.key }) {
            writer.string(key)
            writer.string(value)
        }
        writer.i64(metadata.issuedAt.milliseconds)
        for time in [metadata.expiresAt, metadata.refreshAt, metadata.refreshTokenExpiresAt] {
            writer.optional(time) { $0.i64($1.milliseconds) }
        }
        writer.optional(metadata.lastError) {
            $0.string($1.code)
            $0.string($1.message)
            $0.i64($1.at.milliseconds)
        }
        writer.i64(Int64(metadata.refreshFailures))
        writer.i64(metadata.createdAt.milliseconds)
        writer.i64(metadata.updatedAt.milliseconds)
        writer.bool(metadata.hasRefreshToken)
        writer.bool(metadata.hasIDToken)
        writer.u32(record.sealTerm)
        writer.data(record.accessToken)
        for envelope in [record.refreshToken, record.idToken, record.extras] {
            writer.optional(envelope) { $0.data($1) }
        }
        writer.optional(metadata.grant?.json) { $0.string($1) }
    }

    static func read(from reader: inout WireReader) throws -> SealedCredentialRecord {
        func timestamp(_ reader: inout WireReader) throws -> Timestamp { Timestamp(milliseconds: try reader.i64()) }
        let id = try CredentialID(try reader.string())
        let provider = try reader.string()
        guard let kind = CredentialKind(rawValue: try reader.string()) else { throw WireError.malformed("kind") }
        let subject = try reader.optional { try $0.string() }
        guard let status = CredentialStatus(rawValue: try reader.string()) else { throw WireError.malformed("status") }
        let generation = try reader.i64()
        let tokenType = try reader.optional { try $0.string() }
        var scopes: [String] = []
        for _ in 0..<(try reader.u32()) { scopes.append(try reader.string()) }
        var labels: [String: String] = [:]
        for _ in 0..<(try reader.u32()) { labels[try reader.string()] = try reader.string() }
        let issuedAt = try timestamp(&reader)
        let expiresAt = try reader.optional { try timestamp(&$0) }
        let refreshAt = try reader.optional { try timestamp(&$0) }
        let refreshTokenExpiresAt = try reader.optional { try timestamp(&$0) }
        let lastError = try reader.optional {
            CredentialFailure(code: try $0.string(), message: try $0.string(), at: try timestamp(&$0))
        }
        let metadata = CredentialMetadata(
            id: id, provider: provider, kind: kind, subject: subject, status: status, generation: generation,
            tokenType: tokenType, scopes: scopes, labels: labels, issuedAt: issuedAt, expiresAt: expiresAt,
            refreshAt: refreshAt, refreshTokenExpiresAt: refreshTokenExpiresAt, lastError: lastError,
            refreshFailures: Int(try reader.i64()), createdAt: try timestamp(&reader),
            updatedAt: try timestamp(&reader), hasRefreshToken: try reader.bool(), hasIDToken: try reader.bool())
        var record = SealedCredentialRecord(
            metadata: metadata, sealTerm: try reader.u32(), accessToken: try reader.data(),
            refreshToken: try reader.optional { try $0.data() }, idToken: try reader.optional { try $0.data() },
            extras: try reader.optional { try $0.data() })
        if !reader.isAtEnd, let json = try reader.optional({ try $0.string() }) {
            guard let grant = CredentialGrant(json: json) else { throw WireError.malformed("grant") }
            record.metadata.grant = grant
        }
        try reader.finish()
        return record
    }
}
