import Foundation
import Logging
import NIOCore
import Synchronization

/// How the daemon writes its log lines to stderr (`log.format`, `TOKENVAULT_LOG_FORMAT`).
public enum LogFormat: String, Sendable, CaseIterable {
    /// `2026-11-24T09:00:00.123Z info tokenvault: message key=value`; without the timestamp when
    /// stderr is the journal's (it stamps every line itself).
    case text
    /// One JSON object per line: `time`, `level`, `label`, `message`, then the metadata under its
    /// own dotted keys (`tokenvault.credential.id`, …), for log shippers.
    case json
}

/// The daemon's level, shared by every logger so that a reload (SIGHUP) changes it everywhere
/// at once. A logger that sets its own level keeps that one.
public final class LogLevelSwitch: Sendable {
    private let index: Atomic<Int>

    public init(_ level: Logger.Level) { index = Atomic(Self.index(of: level)) }

    public var level: Logger.Level {
        get { Logger.Level.allCases[index.load(ordering: .relaxed)] }
        set { index.store(Self.index(of: newValue), ordering: .relaxed) }
    }

    private static func index(of level: Logger.Level) -> Int { Logger.Level.allCases.firstIndex(of: level)! }
}

/// Writes log events to stderr in `format`, at the level of `levels` unless a logger set its own.
public struct DaemonLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let format: LogFormat
    /// Leave timestamps to the journal (stderr is its stream: `JOURNAL_STREAM` matches it).
    let journal: Bool
    let levels: LogLevelSwitch
    let write: @Sendable (String) -> Void
    private var ownLevel: Logger.Level?

    public init(
        label: String, format: LogFormat, journal: Bool, levels: LogLevelSwitch,
        write: @escaping @Sendable (String) -> Void = DaemonLogHandler.writeToStandardError
    ) {
        self.label = label
        self.format = format
        self.journal = journal
        self.levels = levels
        self.write = write
    }

    public var logLevel: Logger.Level {
        get { ownLevel ?? levels.level }
        set { ownLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        switch format {
        case .text: write(textLine(event, merged))
        case .json: write(jsonLine(event, merged))
        }
    }

    func textLine(_ event: LogEvent, _ metadata: Logger.Metadata) -> String {
        var line = journal ? "" : Self.timestamp() + " "
        line += "\(event.level) \(label): \(event.message)"
        for key in metadata.keys.sorted() { line += " \(key)=\(metadata[key]!)" }
        return line + "\n"
    }

    func jsonLine(_ event: LogEvent, _ metadata: Logger.Metadata) -> String {
        var line = "{\"time\":\"\(Self.timestamp())\",\"level\":\"\(event.level)\",\"label\":"
        line += Self.quoted(label) + ",\"message\":" + Self.quoted("\(event.message)")
        for key in metadata.keys.sorted() where !["time", "level", "label", "message"].contains(key) {
            line += "," + Self.quoted(key) + ":" + Self.json(metadata[key]!)
        }
        return line + "}\n"
    }

    static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let text): return quoted(text)
        case .stringConvertible(let convertible): return quoted(convertible.description)
        case .array(let values): return "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let members):
            return "{" + members.keys.sorted().map { quoted($0) + ":" + json(members[$0]!) }.joined(separator: ",")
                + "}"
        }
    }

    /// A JSON string literal, written by the one JSON string writer (`JSONBytes`).
    static func quoted(_ text: String) -> String {
        var text = text
        var buffer = ByteBufferAllocator().buffer(capacity: JSONBytes.bound(string: text.utf8.count))
        text.withUTF8 { TokenJSON.writeString(UnsafeRawBufferPointer($0), to: &buffer) }
        return String(buffer: buffer)
    }

    /// UTC, milliseconds: `2026-11-24T09:00:00.123Z`.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec, Int(now.tv_nsec / 1_000_000))
    }

    /// Whether stderr is the journal's stream: `JOURNAL_STREAM` holds its `device:inode`.
    public static func stderrIsJournal(_ environment: [String: String]) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return stream == "\(info.st_dev):\(info.st_ino)"
    }

    public static let writeToStandardError: @Sendable (String) -> Void = { line in
        var line = line
        line.withUTF8 { bytes in _ = Foundation.write(STDERR_FILENO, bytes.baseAddress, bytes.count) }
    }
}
