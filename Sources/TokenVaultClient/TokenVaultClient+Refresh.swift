import AsyncHTTPClient
import Foundation
import NIOCore

/// Forced refresh and the watch stream.
extension TokenVaultClient {
    /// `POST /v1/credentials/{namespace}/{name}/refresh`: refreshes now and returns the new
    /// metadata. At most once per credential every `limits.on_demand_refresh_seconds` (10 s by
    /// default; `rate_limited`, 429); a rejected refresh token gives `needs_reauth` (409), a
    /// provider failure `provider_unavailable` (502).
    @discardableResult
    public func refresh(_ id: String) async throws -> CredentialMetadata {
        try await send(.post, try Self.credentialPath(id, "/refresh"), timeout: .seconds(60))
            .decode(CredentialMetadata.self)
    }

    /// `GET /v1/credentials/{namespace}/{name}/watch`: the credential's metadata now, then again
    /// on every change, until it is deleted (the stream then ends) or the task is cancelled.
    public func watch(_ id: String) -> AsyncThrowingStream<CredentialMetadata, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await streamLines(try Self.credentialPath(id, "/watch")) { line in
                        continuation.yield(try JSONDecoder().decode(CredentialMetadata.self, from: line))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Reads an NDJSON answer line by line as it arrives.
    private func streamLines(_ path: String, _ onLine: (Data) throws -> Void) async throws {
        guard let url = URL(httpURLWithSocketPath: socketPath, uri: path) else {
            throw TokenVaultClientError.invalidArgument("'\(socketPath)' cannot be used as a socket path")
        }
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "Accept", value: "application/x-ndjson")
        let response: HTTPClientResponse
        do {
            // A watch lasts as long as the caller wants: no deadline.
            response = try await http.execute(request, timeout: .hours(24 * 365))
        } catch {
            throw translate(error)
        }
        guard response.status.code == 200 else {
            let body = try await response.body.collect(upTo: 1 << 20)
            throw failure(status: Int(response.status.code), body: body, route: "GET \(path)")
        }
        var pending = Data()
        do {
            for try await chunk in response.body {
                pending.append(contentsOf: chunk.readableBytesView)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = pending[pending.startIndex..<newline]
                    pending = Data(pending[pending.index(after: newline)...])
                    if !line.isEmpty { try onLine(Data(line)) }
                }
            }
        } catch let error as DecodingError {
            throw TokenVaultClientError.unexpectedResponse(
                status: 200, detail: "a watch line is not metadata: \(error)")
        } catch {
            throw translate(error)
        }
    }
}
