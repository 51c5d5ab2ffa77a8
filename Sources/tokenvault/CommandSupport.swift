import ArgumentParser
import Foundation
import TokenVaultClient
import TokenVaultCore

/// Runs a command body, printing a `VaultError` as one line on stderr and mapping it to the
/// documented exit code (see `tokenvault --help`).
func reportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as VaultError {
        throw report(error)
    }
}

/// `reportingErrors` for async commands.
func reportingErrorsAsync(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as VaultError {
        throw report(error)
    }
}

/// Prints `error` as one line on stderr and returns the exit code it maps to.
private func report(_ error: VaultError) -> ExitCode {
    TerminalText.error("tokenvault: error: \(error.detail) [\(error.code)]")
    return ExitCode(error.code == .credentialNotFound ? 3 : 1)
}

func printError(_ message: String) {
    TerminalText.error("tokenvault: \(message)")
}

func printJSON(_ value: some Encodable) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// A plain left-aligned text table for people; every cell made safe for a terminal.
func printTable(_ header: [String], _ rows: [[String]]) {
    let rows = rows.map { $0.map(TerminalText.safe) }
    let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
    for row in [header] + rows {
        print(
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  "))
    }
}

extension CredentialID: ExpressibleByArgument {
    public init?(argument: String) {
        guard let id = try? CredentialID(argument) else { return nil }
        self = id
    }
}

/// `--label key=value` options (repeatable), or others of that form (`what` names them), as a
/// map; the last value of a key wins.
func parseLabels(_ labels: [String], what: String = "label") throws -> [String: String] {
    var parsed: [String: String] = [:]
    for label in labels {
        guard let equals = label.firstIndex(of: "="), equals != label.startIndex else {
            throw ValidationError("\(what) '\(label)' is not key=value")
        }
        parsed[String(label[..<equals])] = String(label[label.index(after: equals)...])
    }
    return parsed
}

/// A data directory made private to the daemon's user (0700), or the existing one.
func createPrivateDirectory(_ path: String) throws {
    var isDirectory: ObjCBool = false
    if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
        guard isDirectory.boolValue else {
            throw VaultError.storage("data directory \(path) exists and is not a directory")
        }
        return
    }
    do {
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    } catch {
        throw VaultError.storage("cannot create data directory \(path): \(error.localizedDescription)")
    }
}

/// One call on a client of its own, closed before the outcome is looked at (a shutdown left to a
/// detached task would race the process's exit).
func callDaemon<Answer: Sendable>(at socket: String, _ body: (TokenVaultClient) async throws -> Answer) async
    -> Result<Answer, any Error>
{
    let client = TokenVaultClient(socketPath: socket)
    let outcome: Result<Answer, any Error>
    do {
        outcome = .success(try await body(client))
    } catch {
        outcome = .failure(error)
    }
    try? await client.shutdown()
    return outcome
}
