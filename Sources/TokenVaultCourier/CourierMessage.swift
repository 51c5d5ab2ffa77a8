import TokenVaultCore
import TokenVaultProviders

/// What the daemon and the courier say to each other, one message per frame.
///
/// daemon -> courier: `hello` (once: the spool's public key and the provider instances, whose
/// TLS settings the courier reads itself), `call` (a prepared request, tagged with its call key
/// when its answer must outlive the daemon), `settle` (the daemon no longer needs the courier's
/// copy of that key's answer).
/// courier -> daemon: `ready` (once: it holds the spool lock and serves), `answer` (per call).
enum CourierMessage: Sendable {
    case hello(Hello)
    case ready(pid: Int32)
    case call(Call)
    case answer(id: UInt64, CallResult)
    case settle(key: String)

    struct Hello: Sendable {
        var spoolPublicKey: [UInt8]
        var instances: [Instance]
    }

    /// A provider instance as configured: the courier builds its transport from this.
    struct Instance: Sendable, Equatable {
        var name: String
        var kind: String
        var concurrency: Int
        /// The instance's options as JSON (`ProviderSettings.options`).
        var options: [UInt8]
    }

    struct Call: Sendable {
        var id: UInt64
        /// Set when the answer must outlive the daemon (`ProviderCall.key`).
        var key: String?
        var context: SecretBytes?
        var instance: String
        var request: PreparedRequest
    }

    private enum Tag: UInt8 { case hello = 1, ready, call, answer, settle }

    func encoded() -> [UInt8] {
        var writer = WireWriter()
        switch self {
        case .hello(let hello):
            writer.u8(Tag.hello.rawValue)
            writer.data(hello.spoolPublicKey)
            writer.u32(UInt32(hello.instances.count))
            for instance in hello.instances {
                writer.string(instance.name)
                writer.string(instance.kind)
                writer.u32(UInt32(clamping: instance.concurrency))
                writer.data(instance.options)
            }
        case .ready(let pid):
            writer.u8(Tag.ready.rawValue)
            writer.u32(UInt32(bitPattern: pid))
        case .call(let call):
            writer.u8(Tag.call.rawValue)
            writer.u64(call.id)
            writer.optional(call.key) { $0.string($1) }
            writer.optional(call.context) { $0.secret($1) }
            writer.string(call.instance)
            call.request.write(to: &writer)
        case .answer(let id, let result):
            writer.u8(Tag.answer.rawValue)
            writer.u64(id)
            result.write(to: &writer)
        case .settle(let key):
            writer.u8(Tag.settle.rawValue)
            writer.string(key)
        }
        return writer.bytes
    }

    static func decode(_ bytes: [UInt8]) throws -> CourierMessage {
        var reader = WireReader(bytes)
        let message: CourierMessage
        switch Tag(rawValue: try reader.u8()) {
        case .hello:
            let key = try reader.data()
            let count = try reader.u32()
            guard count <= 10_000 else { throw WireError.malformed("\(count) provider instances") }
            var instances: [Instance] = []
            for _ in 0..<count {
                instances.append(
                    Instance(
                        name: try reader.string(), kind: try reader.string(), concurrency: Int(try reader.u32()),
                        options: try reader.data()))
            }
            message = .hello(Hello(spoolPublicKey: key, instances: instances))
        case .ready: message = .ready(pid: Int32(bitPattern: try reader.u32()))
        case .call:
            message = .call(
                Call(
                    id: try reader.u64(), key: try reader.optional { try $0.string() },
                    context: try reader.optional { try $0.secret() }, instance: try reader.string(),
                    request: try PreparedRequest.read(from: &reader)))
        case .answer: message = .answer(id: try reader.u64(), try CallResult.read(from: &reader))
        case .settle: message = .settle(key: try reader.string())
        case nil: throw WireError.malformed("unknown message type")
        }
        try reader.finish()
        return message
    }
}

/// How a call ended: an answer (any status), or a failure to get one.
enum CallResult: Sendable, Equatable {
    case answer(HTTPAnswer)
    case failure(ProviderFailure)

    func write(to writer: inout WireWriter) {
        switch self {
        case .answer(let answer):
            writer.u8(1)
            writer.u32(UInt32(clamping: answer.status))
            writer.u32(UInt32(answer.headers.count))
            for (name, value) in answer.headers.sorted(by: { $0.key < $1.key }) {
                writer.string(name)
                writer.string(value)
            }
            writer.data(answer.body)
            writer.bool(answer.bodyTooLarge)
        case .failure(let failure):
            writer.u8(2)
            writer.string(failure.kind.rawValue)
            writer.string(failure.code)
            writer.string(failure.message)
            writer.optional(failure.retryAfter) { $0.double($1) }
            writer.optional(failure.httpStatus) { $0.u32(UInt32(clamping: $1)) }
        }
    }

    static func read(from reader: inout WireReader) throws -> CallResult {
        switch try reader.u8() {
        case 1:
            let status = Int(try reader.u32())
            let count = try reader.u32()
            guard count <= 1000 else { throw WireError.malformed("\(count) headers") }
            var headers: [String: String] = [:]
            for _ in 0..<count { headers[try reader.string()] = try reader.string() }
            return .answer(
                HTTPAnswer(status: status, headers: headers, body: try reader.data(), bodyTooLarge: try reader.bool()))
        case 2:
            guard let kind = ProviderFailure.Kind(rawValue: try reader.string()) else {
                throw WireError.malformed("unknown failure kind")
            }
            return .failure(
                ProviderFailure(
                    kind: kind, code: try reader.string(), message: try reader.string(),
                    retryAfter: try reader.optional { try $0.double() },
                    httpStatus: try reader.optional { Int(try $0.u32()) }))
        default: throw WireError.malformed("unknown call result")
        }
    }
}

extension PreparedRequest {
    func write(to writer: inout WireWriter) {
        writer.string(method)
        writer.string(url)
        writer.u32(UInt32(headers.count))
        for field in headers {
            writer.string(field.name)
            writer.string(field.value)
        }
        writer.data(body)
    }

    static func read(from reader: inout WireReader) throws -> PreparedRequest {
        let method = try reader.string()
        let url = try reader.string()
        let count = try reader.u32()
        guard count <= 1000 else { throw WireError.malformed("\(count) headers") }
        var headers: [HeaderField] = []
        for _ in 0..<count { headers.append(HeaderField(name: try reader.string(), value: try reader.string())) }
        return PreparedRequest(method: method, url: url, headers: headers, body: try reader.data())
    }
}
