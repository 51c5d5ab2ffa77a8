import Foundation
import TokenVaultCore

#if canImport(Glibc)
    import Glibc
#endif

/// ESIA's per-request `client_secret`: a GOST R 34.10-2012 signature over request fields. GOST
/// is out of reach of our crypto library, so an operator-configured signer program makes it
/// (string to sign on stdin, base64url signature on stdout); this type decides what is signed
/// and turns every way the signer can fail into a classified `ProviderFailure`.
struct ESIAClientSecret: Sendable {
    let signer: ExternalCommand

    /// The string to sign: `client_id + scope + timestamp + state + redirect_uri`, concatenated
    /// without separators. ESIA's method guide (Методические рекомендации по использованию
    /// ЕСИА) is the authority; if it changes the order, this is the only place to change.
    static func stringToSign(
        clientID: String, scope: String, timestamp: String, state: String, redirectURI: String
    ) -> String {
        clientID + scope + timestamp + state + redirectURI
    }

    /// `yyyy.MM.dd HH:mm:ss Z` in UTC, e.g. `2026.11.22 07:12:30 +0000`, without a formatter
    /// (no locale or calendar can change it).
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900).\(two(parts.tm_mon + 1)).\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) +0000"
    }

    /// Runs the signer over `text`. Failures are `signer_failed` (misconfigured: the operator
    /// must fix the signer) or `signer_timeout` (transient). Messages carry the exit status and
    /// the first line of stderr, never the string signed.
    func sign(_ text: String) async throws(ProviderFailure) -> SecretBytes {
        let program = (signer.arguments.first ?? "").split(separator: "/").last.map(String.init) ?? "signer"
        switch await signer.run(input: Array(text.utf8)) {
        case .failedToStart(let reason):
            throw failed("the signer \(program) could not be started: \(reason)")
        case .timedOut:
            throw ProviderFailure(
                kind: .transient, code: .signerTimeout,
                message: "the signer \(program) did not answer within \(signer.timeoutSeconds) s and was killed")
        case .exited(let status, let stdout, let stderr):
            guard status == 0 else {
                let line = Self.firstLine(stderr)
                throw failed(
                    "the signer \(program) exited with status \(status)" + (line.isEmpty ? "" : ": \(line)"))
            }
            var output = stdout[...]
            while let last = output.last, last == 10 || last == 13 || last == 32 || last == 9 { output.removeLast() }
            while let first = output.first, first == 10 || first == 13 || first == 32 || first == 9 {
                output.removeFirst()
            }
            guard !output.isEmpty else { throw failed("the signer \(program) printed nothing on stdout") }
            guard output.allSatisfy(Self.isBase64URL) else {
                throw failed("the signer \(program) printed something that is not base64url text")
            }
            return SecretBytes(output)
        }
    }

    private func failed(_ message: String) -> ProviderFailure {
        ProviderFailure(kind: .misconfigured, code: .signerFailed, message: OperatorText.clean(message))
    }

    /// `A-Z a-z 0-9 - _` and `=` padding.
    private static func isBase64URL(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "="):
            return true
        default:
            return false
        }
    }

    private static func firstLine(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes.prefix(1024), as: UTF8.self)
        let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).first.map(String.init) ?? ""
        return OperatorText.clean(line, limit: 120)
    }
}
