import Foundation

/// Everything a `TokenVaultClient` call throws, besides `CancellationError`.
/// Descriptions never contain a token value.
public enum TokenVaultClientError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The daemon refused the request with a problem document (see `Problem.code`).
    case problem(Problem)
    /// No daemon answers at the socket: it is missing, refuses connections, is not accessible,
    /// or the daemon went away mid-request.
    case daemonUnreachable(socketPath: String, underlying: String)
    /// An answer that is neither the expected document nor a problem document.
    case unexpectedResponse(status: Int, detail: String)
    /// The daemon did not answer within the client's timeout.
    case timeout
    /// The id is not `namespace/name`; nothing was sent.
    case invalidCredentialID(String)
    /// An argument the client refuses before sending anything.
    case invalidArgument(String)
    /// Any other failure of the HTTP transport.
    case transport(String)

    /// The problem's stable code (`credential_not_found`, `token_expired`, ...), if the daemon sent one.
    public var code: String? {
        if case .problem(let problem) = self { return problem.code }
        return nil
    }

    /// The HTTP status, if there was an answer.
    public var status: Int? {
        switch self {
        case .problem(let problem): problem.status
        case .unexpectedResponse(let status, _): status
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .problem(let problem):
            "tokenvault daemon: \(problem)"
        case .daemonUnreachable(let socketPath, let underlying):
            "cannot reach the tokenvault daemon at \(socketPath): \(underlying). "
                + "Start it with `tokenvault serve`, or point --socket or TOKENVAULT_SOCKET at its socket."
        case .unexpectedResponse(let status, let detail):
            "unexpected answer from the tokenvault daemon (HTTP \(status)): \(detail)"
        case .timeout:
            "the tokenvault daemon did not answer in time"
        case .invalidCredentialID(let id):
            "'\(id)' is not a credential id; expected namespace/name"
        case .invalidArgument(let detail):
            detail
        case .transport(let detail):
            "talking to the tokenvault daemon failed: \(detail)"
        }
    }

    public var errorDescription: String? { description }
}
