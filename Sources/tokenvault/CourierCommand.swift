import ArgumentParser
import Foundation
import Logging
import TokenVaultCourier
import TokenVaultServer
import TokenVaultSystem

/// `tokenvault courier`: the daemon's courier process, started by `serve` with the socketpair
/// as descriptor 3. Not for people: it speaks only the daemon's framing.
struct CourierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier", abstract: "The daemon's provider-call process (started by serve; not for people).",
        shouldDisplay: false)

    @Option(help: "The spool directory.") var spool: String
    @Option(help: "The daemon's log format: text or json.") var logFormat: String = LogFormat.text.rawValue
    @Option(help: "The daemon's log level at start-up.") var logLevel: String = Logger.Level.info.rawValue

    func run() async throws {
        // The daemon's stderr, so the daemon's format: one JSON object per line stays one.
        let format = LogFormat(rawValue: logFormat) ?? .text
        let levels = LogLevelSwitch(Logger.Level(rawValue: logLevel) ?? .info)
        let journal = DaemonLogHandler.stderrIsJournal(ProcessInfo.processInfo.environment)
        LoggingSystem.bootstrap { label in
            DaemonLogHandler(label: label, format: format, journal: journal, levels: levels)
        }
        let logger = Logger(label: "tokenvault.courier")
        // As hardened as its daemon: one that turned core dumps off passed RLIMIT_CORE 0 down, but
        // exec made this process dumpable again (readable through /proc by the same user).
        if ProcessHygiene.coreLimit == 0 {
            for problem in ProcessHygiene.disableCoreDumps() {
                logger.warning("could not disable core dumps", metadata: ["tokenvault.error": "\(problem)"])
            }
        }
        let status = await Courier.run(descriptor: 3, spoolDirectory: spool, logger: logger)
        if status != 0 { throw ExitCode(status) }
    }
}
