import Foundation
import Logging
import Synchronization
import Testing

@testable import TokenVaultServer

/// `log.format`: JSON lines a shipper can parse, text without timestamps under the journal, and
/// one level switch that a reload turns for every logger.
@Suite struct DaemonLogHandlerTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
        func append(_ line: String) { lines.withLock { $0.append(line) } }
    }

    func logger(_ format: LogFormat, journal: Bool = false, levels: LogLevelSwitch, into lines: Lines) -> Logger {
        Logger(label: "tokenvault") { label in
            DaemonLogHandler(label: label, format: format, journal: journal, levels: levels, write: lines.append)
        }
    }

    @Test func jsonIsOneObjectPerLineWithTheDottedKeys() throws {
        let lines = Lines()
        var logger = logger(.json, levels: LogLevelSwitch(.info), into: lines)
        logger[metadataKey: "tokenvault.request.id"] = "r-1"
        logger.warning(
            "refresh failed: \"quoted\"\nsecond line",
            metadata: ["tokenvault.credential.id": "payments/alice", "tokenvault.attempt": "\(3)"])
        #expect(lines.all.count == 1)
        let line = try #require(lines.all.first)
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1)
        let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["level"] == "warning")
        #expect(object["label"] == "tokenvault")
        #expect(object["message"] == "refresh failed: \"quoted\"\nsecond line")
        #expect(object["tokenvault.credential.id"] == "payments/alice")
        #expect(object["tokenvault.request.id"] == "r-1")
        #expect(object["tokenvault.attempt"] == "3")
        #expect(object["time"]?.hasSuffix("Z") == true)
    }

    @Test func textLeavesTimestampsToTheJournal() {
        let lines = Lines()
        logger(.text, journal: true, levels: LogLevelSwitch(.info), into: lines).info("started", metadata: ["k": "v"])
        logger(.text, journal: false, levels: LogLevelSwitch(.info), into: lines).info("started")
        #expect(lines.all[0] == "info tokenvault: started k=v\n")
        #expect(lines.all[1].hasPrefix("20") && lines.all[1].hasSuffix(" info tokenvault: started\n"))
    }

    @Test func theSharedLevelChangesEveryLoggerAtOnce() {
        let lines = Lines()
        let levels = LogLevelSwitch(.info)
        let first = logger(.text, journal: true, levels: levels, into: lines)
        let second = logger(.text, journal: true, levels: levels, into: lines)
        first.debug("hidden")
        levels.level = .debug
        first.debug("shown")
        second.debug("shown too")
        #expect(lines.all == ["debug tokenvault: shown\n", "debug tokenvault: shown too\n"])
    }

    @Test func journalIsRecognisedByTheDeviceAndInodeOfStderr() {
        var info = stat()
        fstat(STDERR_FILENO, &info)
        #expect(DaemonLogHandler.stderrIsJournal(["JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)"]))
        #expect(!DaemonLogHandler.stderrIsJournal(["JOURNAL_STREAM": "1:2"]))
        #expect(!DaemonLogHandler.stderrIsJournal([:]))
    }
}
