import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A loopback HTTP API for the proxy's tests (Hummingbird on 127.0.0.1, a port of its own):
///
/// - `/echo…`: what it received, as JSON (method, path with query, headers but `Authorization`'s value).
/// - `/protected`: 401 `invalid_token` unless `accepts` the bearer token, else as `/echo`.
/// - `/redirect?to=URL`: 302 to URL.
/// - `/stream?bytes=N`: N bytes, generated while they are sent (never held whole).
/// - `/upload`: reads the body as it arrives, answers its length and a checksum.
/// - `/hold?seconds=S`: answers after S seconds.
/// - `/status?code=N`: answers N with no body (204 and 304 are framed by having none).
/// - `/drip?seconds=S`: a 200 whose body comes a line every 0.2 s for S seconds.
/// - `/compressed`: the token in a body marked `Content-Encoding: gzip`, whatever was asked for.
/// - `/reflect-body`: the bearer token it received, as sent and percent-encoded, in a JSON body sent
///   three bytes at a time (an upstream that echoes its request).
/// - `/dpop` (GET, POST): a DPoP resource (RFC 9449 section 7): `Authorization: DPoP <token>` and a
///   proof `dpop`'s verifier accepts, made with the key the token is bound to; else 401 with a
///   `WWW-Authenticate: DPoP` challenge (and `DPoP-Nonce` when it wants a nonce). As `/echo` then.
public final class TestUpstream: Sendable {
    public let port: Int
    public var base: String { "http://127.0.0.1:\(port)" }
    /// Every request's method and path (with query), in order.
    public var received: [String] { recording.requests.withLock { $0 } }
    /// The `Authorization` headers received, in order.
    public var authorizations: [String] { recording.authorizations.withLock { $0 } }

    private final class Recording: Sendable {
        let requests = Mutex<[String]>([])
        let authorizations = Mutex<[String]>([])
    }

    private let recording = Recording()
    private let application: LoopbackApplication

    /// `dpop`: how `/dpop` checks proofs, and which key a token is bound to (the token endpoint's
    /// record, `TestOAuthServer.boundKey(of:)`).
    public init(
        accepts: @escaping @Sendable (String) -> Bool = { _ in true },
        dpop: (verifier: DPoPVerifier, boundKey: @Sendable (String) -> String?)? = nil
    ) async throws {
        let recording = recording
        let router = Router()
        router.middlewares.add(
            RecordingMiddleware { method, path, authorization in
                recording.requests.withLock { $0.append("\(method) \(path)") }
                recording.authorizations.withLock { $0.append(authorization ?? "") }
            })
        router.on("/echo/**", method: .get) { request, _ in try Self.echo(request) }
        for method in [HTTPRequest.Method.get, .post, .put, .patch, .delete, .head, .options] {
            router.on("/echo", method: method) { request, _ in try Self.echo(request) }
        }
        router.get("/protected") { request, _ -> Response in
            let token = request.headers[.authorization].map { String($0.split(separator: " ").last ?? "") } ?? ""
            guard accepts(token) else {
                return Response(
                    status: .unauthorized,
                    headers: [.wwwAuthenticate: #"Bearer error="invalid_token", error_description="expired""#])
            }
            return try Self.echo(request)
        }
        for method in [HTTPRequest.Method.get, .post] {
            router.on("/dpop", method: method) { request, _ -> Response in
                guard let dpop else { return Response(status: .notFound) }
                return try Self.dpopResource(request, dpop.verifier, dpop.boundKey)
            }
        }
        // An upstream that writes the token it was sent back into its answer's headers: as it
        // came, and percent-encoded (every byte, lower-case hex) in a URL, as a careless
        // callback or a debugging header would.
        router.get("/reflect") { request, _ -> Response in
            let authorization = request.headers[.authorization] ?? ""
            let token = String(authorization.split(separator: " ").last ?? "")
            let encoded = token.utf8.map { String(format: "%%%02x", $0) }.joined()
            return Response(
                status: .ok,
                headers: [
                    .init("X-Echo-Authorization")!: authorization,
                    .location: "https://elsewhere.example/callback?token=\(encoded)",
                    .init("X-Safe")!: "kept",
                ])
        }
        router.get("/reflect-body") { request, _ -> Response in
            let token = request.headers[.authorization].map { String($0.split(separator: " ").last ?? "") } ?? ""
            let encoded = token.utf8.map { String(format: "%%%02x", $0) }.joined()
            let body = Array(#"{"raw":"\#(token)","encoded":"\#(encoded)","end":true}"#.utf8)
            return Response(
                status: .ok, headers: [.contentType: "application/json", .contentLength: "\(body.count)"],
                body: ResponseBody { writer in
                    // Three bytes at a time: a token reaches the proxy split across its pieces.
                    for start in stride(from: 0, to: body.count, by: 3) {
                        try await writer.write(ByteBuffer(bytes: body[start..<min(body.count, start + 3)]))
                        try await Task.sleep(for: .milliseconds(1))
                    }
                    try await writer.finish(nil)
                })
        }
        router.get("/compressed") { request, _ -> Response in
            let token = request.headers[.authorization].map { String($0.split(separator: " ").last ?? "") } ?? ""
            return Response(
                status: .ok, headers: [.contentType: "text/plain", .contentEncoding: "gzip"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "not really gzip: \(token)")))
        }
        router.get("/drip") { request, _ -> Response in
            let seconds = request.uri.queryParameters.get("seconds").flatMap(Double.init) ?? 1
            return Response(
                status: .ok, headers: [.contentType: "text/plain"],
                body: ResponseBody { writer in
                    let started = ContinuousClock.now
                    while ContinuousClock.now - started < .seconds(seconds) {
                        try await writer.write(ByteBuffer(string: "drip\n"))
                        try await Task.sleep(for: .milliseconds(200))
                    }
                    try await writer.finish(nil)
                })
        }
        router.get("/status") { request, _ -> Response in
            Response(status: .init(code: request.uri.queryParameters.get("code").flatMap(Int.init) ?? 200))
        }
        router.get("/redirect") { request, _ -> Response in
            Response(status: .found, headers: [.location: request.uri.queryParameters.get("to") ?? "/"])
        }
        router.get("/stream") { request, _ -> Response in
            let total = request.uri.queryParameters.get("bytes").flatMap(Int.init) ?? 0
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream"],
                body: ResponseBody { writer in
                    var sent = 0
                    while sent < total {
                        let count = min(64 * 1024, total - sent)
                        try await writer.write(
                            ByteBuffer(repeating: UInt8(truncatingIfNeeded: sent / 65_536), count: count))
                        sent += count
                    }
                    try await writer.finish(nil)
                })
        }
        router.on("/upload", method: .post) { request, _ -> Response in
            var length = 0
            var checksum: UInt64 = 0
            for try await buffer in request.body {
                length += buffer.readableBytes
                for byte in buffer.readableBytesView { checksum = checksum &* 31 &+ UInt64(byte) }
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"length": \#(length), "checksum": "\#(checksum)"}"#)))
        }
        router.get("/hold") { request, _ -> Response in
            let seconds = request.uri.queryParameters.get("seconds").flatMap(Double.init) ?? 1
            try await Task.sleep(for: .seconds(seconds))
            return Response(status: .ok)
        }
        application = try await LoopbackApplication.start(router, label: "test-upstream")
        port = application.port
    }

    public func stop() async { await application.stop() }

    /// The checksum `/upload` answers for `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 &* 31 &+ UInt64($1) }
    }

    private static func dpopResource(
        _ request: Request, _ verifier: DPoPVerifier, _ boundKey: (String) -> String?
    ) throws -> Response {
        func challenge(_ error: String, nonce: String? = nil) -> Response {
            var headers: HTTPFields = [.wwwAuthenticate: #"DPoP algs="ES256", error="\#(error)""#]
            if let nonce { headers[.init("DPoP-Nonce")!] = nonce }
            return Response(status: .unauthorized, headers: headers)
        }
        let authorization = request.headers[.authorization] ?? ""
        guard authorization.hasPrefix("DPoP ") else { return challenge("invalid_token") }
        let token = String(authorization.dropFirst(5))
        let proofs = request.headers[values: .init("DPoP")!]
        let url = "http://" + (request.head.authority ?? "") + (request.head.path ?? "")
        switch verifier.check(
            proof: proofs.count == 1 ? proofs[0] : nil, method: request.method.rawValue, url: url, accessToken: token)
        {
        case .nonceRequired(let nonce): return challenge("use_dpop_nonce", nonce: nonce)
        case .refused: return challenge("invalid_dpop_proof")
        case .accepted(let thumbprint):
            guard boundKey(token) == thumbprint else { return challenge("invalid_token") }
            return try echo(request)
        }
    }

    private static func echo(_ request: Request) throws -> Response {
        var headers: [String: String] = [:]
        // The token a proxied call carries is not written back (`authorizations` has it).
        for field in request.headers {
            headers[field.name.canonicalName, default: ""] += field.name == .authorization ? "(present)" : field.value
        }
        let document: [String: Any] = [
            "method": request.method.rawValue, "path": request.head.path ?? "", "headers": headers,
        ]
        let data = try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])
        return Response(
            status: .ok, headers: [.contentType: "application/json", .init("X-Upstream")!: "yes"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Records each request's method, path and `Authorization` as it arrives.
private struct RecordingMiddleware<Context: RequestContext>: RouterMiddleware {
    let record: @Sendable (String, String, String?) -> Void

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        record(request.method.rawValue, request.head.path ?? "", request.headers[.authorization])
        return try await next(request, context)
    }
}
