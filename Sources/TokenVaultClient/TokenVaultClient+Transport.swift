import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationCompat

/// One request/response exchange: URL building, sending, reading the whole body, and turning
/// every failure into a `TokenVaultClientError` (or `CancellationError`).
extension TokenVaultClient {
    enum Method: String, Sendable {
        case get = "GET", put = "PUT", post = "POST", delete = "DELETE"
    }

    /// A fully read answer.
    struct Reply: Sendable {
        let status: Int
        let body: ByteBuffer
        /// `TokenVault-Revoked` on a `DELETE`.
        var revoked: Bool? = nil
        /// `METHOD /path` (no query), for error messages.
        let route: String

        /// Decodes the body; a failure names the missing or mistyped key, never a value.
        func decode<Document: Decodable>(_ type: Document.Type) throws -> Document {
            do {
                return try JSONDecoder().decode(Document.self, from: body)
            } catch {
                throw TokenVaultClientError.unexpectedResponse(
                    status: status,
                    detail: "the answer to \(route) is not a valid \(Document.self) document (\(summary(of: error)))")
            }
        }
    }

    /// Lists of 500 credentials are well below this; anything larger is not our daemon.
    static let maximumResponseBytes = 16 << 20

    func send(
        _ method: Method, _ path: String, query: [(String, String?)] = [], body: ByteBuffer? = nil,
        expecting: Set<Int> = [200], timeout: Duration? = nil
    ) async throws -> Reply {
        let route = "\(method.rawValue) \(path)"
        let items = query.compactMap { key, value in value.map { "\(key)=\(Self.percentEncoded($0))" } }
        let uri = items.isEmpty ? path : path + "?" + items.joined(separator: "&")
        guard let url = URL(httpURLWithSocketPath: socketPath, uri: uri) else {
            throw TokenVaultClientError.invalidArgument("'\(socketPath)' cannot be used as a socket path")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        switch method {
        case .get: request.method = .GET
        case .put: request.method = .PUT
        case .post: request.method = .POST
        case .delete: request.method = .DELETE
        }
        request.headers.add(name: "Accept", value: "application/json")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(body)
        }

        let deadline = NIODeadline.now() + TimeAmount(timeout ?? self.timeout)
        let (status, bytes, revoked) = try await exchange(request, deadline: deadline, retryable: method == .get)
        guard expecting.contains(status) else { throw failure(status: status, body: bytes, route: route) }
        return Reply(status: status, body: bytes, revoked: revoked, route: route)
    }

    /// Sends and reads the whole body. A GET that loses a pooled connection the daemon closed
    /// at the same moment (idle timeout) is tried once more; other methods are never repeated.
    private func exchange(_ request: HTTPClientRequest, deadline: NIODeadline, retryable: Bool) async throws
        -> (Int, ByteBuffer, Bool?)
    {
        do {
            let response = try await http.execute(request, deadline: deadline)
            let bytes = try await response.body.collect(upTo: Self.maximumResponseBytes)
            let revoked = response.headers.first(name: "TokenVault-Revoked").map { $0 == "true" }
            return (Int(response.status.code), bytes, revoked)
        } catch let error as HTTPClientError where retryable && error == .remoteConnectionClosed {
            return try await exchange(request, deadline: deadline, retryable: false)
        } catch {
            throw translate(error)
        }
    }

    /// The error for an answer with a status the operation does not expect.
    func failure(status: Int, body: ByteBuffer, route: String) -> TokenVaultClientError {
        if let problem = try? JSONDecoder().decode(Problem.self, from: body) {
            return .problem(problem)
        }
        // A success body may carry a token: never quote it. Error bodies never do.
        guard status >= 400 else {
            return .unexpectedResponse(status: status, detail: "unexpected status for \(route)")
        }
        let text = String(decoding: body.readableBytesView.prefix(200), as: UTF8.self)
            .map { $0.isNewline ? " " : $0 }
        return .unexpectedResponse(
            status: status, detail: "\(route) answered without a problem document: \(String(text))")
    }

    /// Maps AsyncHTTPClient and NIO errors to the client's own.
    func translate(_ error: any Error) -> any Error {
        switch error {
        case is TokenVaultClientError, is CancellationError:
            return error
        case let error as HTTPClientError:
            switch error {
            case .deadlineExceeded, .readTimeout, .writeTimeout, .connectTimeout, .getConnectionFromPoolTimeout:
                return TokenVaultClientError.timeout
            case .cancelled:
                return CancellationError()
            case .remoteConnectionClosed:
                return TokenVaultClientError.daemonUnreachable(
                    socketPath: socketPath, underlying: "the daemon closed the connection")
            case .alreadyShutdown:
                return TokenVaultClientError.transport("the client has been shut down")
            default:
                return TokenVaultClientError.transport(error.description)
            }
        case let error as IOError:
            return TokenVaultClientError.daemonUnreachable(
                socketPath: socketPath, underlying: Self.explain(errno: error.errnoCode, fallback: "\(error)"))
        case let error as ChannelError:
            if case .connectTimeout = error { return TokenVaultClientError.timeout }
            return TokenVaultClientError.daemonUnreachable(socketPath: socketPath, underlying: "\(error)")
        default:
            return TokenVaultClientError.transport(String(describing: error))
        }
    }

    private static func explain(errno code: Int32, fallback: String) -> String {
        switch code {
        case ENOENT: "no socket exists at this path"
        case ECONNREFUSED: "connection refused (nothing is listening on the socket)"
        case EACCES, EPERM: "permission denied (the socket's mode or group does not admit this user)"
        case ENOTSOCK: "the path is not a socket"
        default: fallback
        }
    }

    // MARK: Paths and queries

    /// `/v1/credentials/{namespace}/{name}` plus `suffix`, each segment percent-encoded.
    /// Refuses anything but exactly two non-empty segments, so an id can never reach
    /// another route (`a/b/token` would otherwise read a token).
    static func credentialPath(_ id: String, _ suffix: String = "") throws -> String {
        let parts = id.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            throw TokenVaultClientError.invalidCredentialID(id)
        }
        return "/v1/credentials/\(percentEncoded(String(parts[0])))/\(percentEncoded(String(parts[1])))\(suffix)"
    }

    /// Percent-encodes every byte outside RFC 3986's unreserved set (so `/`, `&`, `=`, `+`
    /// and `%` are always escaped).
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Where and why decoding failed, without any value from the document.
private func summary(of error: any Error) -> String {
    func path(_ keys: [any CodingKey]) -> String {
        keys.isEmpty
            ? "the document" : keys.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
    }
    switch error {
    case DecodingError.keyNotFound(let key, let context):
        return "missing \(path(context.codingPath + [key]))"
    case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
        return "wrong type at \(path(context.codingPath))"
    case DecodingError.dataCorrupted(let context):
        return context.codingPath.isEmpty ? "not valid JSON" : "invalid value at \(path(context.codingPath))"
    default:
        return "\(type(of: error))"
    }
}
