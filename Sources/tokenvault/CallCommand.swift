import ArgumentParser
import Foundation
import NIOCore
import TokenVaultClient

/// `tokenvault call`: an API call through the daemon's proxy, for people and scripts that may
/// use a credential but not read its token.
struct CallCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "call",
        abstract: "Make an API call with a credential's token, without seeing it (the proxy).",
        discussion: """
            TARGET is a URL inside the credential's provider instance's api_base_urls, or a path \
            (with its query) under the first of them. The answer's body goes to standard output \
            as it arrives; --include puts the status line and headers before it. \
            Exit codes: 0 the upstream answered below 400, 4 it answered 400 or above, 3 no such \
            credential, 5 daemon unreachable, 6 permission denied, 1 anything else (the daemon's \
            refusal is printed on standard error).
            """)

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @Argument(help: "HTTP method: GET, POST, PUT, PATCH or DELETE.") var method: String
    @Argument(help: "URL, or a path under the instance's first API base.") var target: String
    @Option(name: [.customShort("H"), .customLong("header")], help: "A request header, 'Name: value' (repeatable).")
    var headers: [String] = []
    @Option(
        name: [.customShort("d"), .customLong("data")],
        help: "The request body: text, @file (streamed from the file) or @- (standard input).")
    var data: String?
    @Flag(name: [.customShort("i"), .customLong("include")], help: "Print the status line and headers first.")
    var include = false

    func validate() throws {
        guard ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(method.uppercased()) else {
            throw ValidationError("method must be GET, POST, PUT, PATCH or DELETE, not \(method)")
        }
        for header in headers where !header.contains(":") {
            throw ValidationError("header '\(header.prefix(100))' is not 'Name: value'")
        }
    }

    func run() async throws {
        let body = try requestBody()
        let fields = headers.map { header in
            let colon = header.firstIndex(of: ":")!
            return TokenVaultClient.UpstreamHeader(
                name: String(header[..<colon]).trimmingCharacters(in: .whitespaces),
                value: String(header[header.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        var upstreamStatus = 0
        try await client.withClient { vault in
            let answer = try await vault.call(id, method: method, target, headers: fields, body: body)
            upstreamStatus = answer.status
            let output = FileHandle.standardOutput
            if client.json {
                let bytes = try await answer.body.collect(upTo: 64 << 20)
                try printJSON(
                    CallDocument(
                        status: answer.status, headers: answer.headers.map { [$0.name, $0.value] },
                        refreshed: answer.refreshed, body: String(decoding: bytes.readableBytesView, as: UTF8.self)))
                return
            }
            // A reader that goes away (`| head`) ends the output, not the process.
            do {
                if include {
                    var head = "HTTP \(answer.status)\r\n"
                    for header in answer.headers { head += "\(header.name): \(header.value)\r\n" }
                    try output.write(contentsOf: Data((head + "\r\n").utf8))
                }
                for try await buffer in answer.body { try output.write(contentsOf: Data(buffer.readableBytesView)) }
            } catch let error as CocoaError
                where error.code == .fileWriteUnknown || error.code == .fileWriteNoPermission
            {
                return
            }
        }
        if upstreamStatus >= 400 { throw ExitCode(4) }
    }

    /// `--data`: literal text, or a file or standard input streamed a piece at a time.
    private func requestBody() throws -> TokenVaultClient.CallBody? {
        guard let data else { return nil }
        guard data.hasPrefix("@") else { return .bytes(ByteBuffer(string: data)) }
        let path = String(data.dropFirst())
        let handle: FileHandle
        var length: Int?
        if path == "-" {
            handle = .standardInput
        } else {
            guard let opened = FileHandle(forReadingAtPath: path) else {
                throw ValidationError("cannot read \(path)")
            }
            handle = opened
            // A regular file's size is its length; a pipe or device (`@/dev/stdin`) has none.
            var info = stat()
            if fstat(opened.fileDescriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
                length = Int(info.st_size)
            }
        }
        // Read when the upload asks for the next piece, so a large file is never held whole.
        let reads = DispatchQueue(label: "tokenvault.call.body")
        let stream = AsyncThrowingStream<ByteBuffer, any Error>(unfolding: {
            let chunk = await withCheckedContinuation { continuation in
                reads.async { continuation.resume(returning: handle.readData(ofLength: 64 * 1024)) }
            }
            return chunk.isEmpty ? nil : ByteBuffer(bytes: chunk)
        })
        return .stream(stream, length: length)
    }
}

/// `call --json`: the upstream's answer as one document (its body as text).
private struct CallDocument: Encodable {
    let status: Int
    let headers: [[String]]
    let refreshed: Bool
    let body: String
}
