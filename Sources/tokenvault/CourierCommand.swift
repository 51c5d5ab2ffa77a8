import ArgumentParser
import Foundation
import Logging
import TokenVaultCourier

/// `tokenvault courier`: the daemon's courier process, started by `serve` with the socketpair
/// as descriptor 3. Not for people: it speaks only the daemon's framing.
struct CourierCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "courier", abstract: "The daemon's provider-call process (started by serve; not for people).",
        shouldDisplay: false)

    @Option(help: "The spool directory.") var spool: String

    func run() async throws {
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        var logger = Logger(label: "tokenvault.courier")
        logger.logLevel =
            ProcessInfo.processInfo.environment["TOKENVAULT_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .info
        let status = await Courier.run(descriptor: 3, spoolDirectory: spool, logger: logger)
        if status != 0 { throw ExitCode(status) }
    }
}
