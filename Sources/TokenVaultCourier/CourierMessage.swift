import TokenVaultCore
import TokenVaultProviders

/// What the daemon and the courier say to each other, one message per frame.
///
/// daemon -> courier: `hello` (once: the spool's public key and the provider instances, whose
/// TLS settings the courier reads itself), `call` (a prepared request, tagged with its call key
/// when its answer must outlive the daemon), `settle` (the daemon no longer needs the courier's
/// copy of that key's answer), `instances` (a reload: the whole set of instances from now on).
/// courier -> daemon: `ready` (once: it holds the spool lock and serves), `answer` (per call),
/// `instancesReady` (per `instances`: the new ones are ready, except those it names).
enum CourierMessage: Sendable {
    case hello(Hello)
    case ready(pid: Int32)
    case call(Call)
    case answer(id: UInt64, CallResult)
    case settle(key: String)
    /// `version` orders the sets: the courier applies a set only if it is newer than the one it
    /// has (two publishes may cross on the way), and answers every one.
    case instances(id: UInt64, version: UInt64, [Instance])
    /// The instances the courier could not make a transport for, each with its configuration key.
    case instancesReady(id: UInt64, unavailable: [ProviderConfigurationError])

    struct Hello: Sendable {
        var spoolPublicKey: [UInt8]
        /// The version of `instances` (see `instances`).
        var version: UInt64 = 0
        var instances: [Instance]
    }

    /// A provider instance as configured: the courier builds its transport from this. `route`
    /// names this transport in calls: an instance a reload re-pointed gets a new route, and calls
    /// the daemon made on the old one still go out the old way until it is retired.
    struct Instance: Sendable, Equatable {
        var route: UInt32
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
        var route: UInt32
        var instance: String
        var request: PreparedRequest
    }

    private enum Tag: UInt8 { case hello = 1, ready, call, answer, settle, instances, instancesReady }

    func encoded() -> [UInt8] {
        var writer = WireWriter()
        switch self {
        case .hello(let hello):
            writer.u8(Tag.hello.rawValue)
            writer.data(hello.spoolPublicKey)
            writer.u64(hello.version)
            Self.write(hello.instances, to: &writer)
        case .ready(let pid):
            writer.u8(Tag.ready.rawValue)
            writer.u32(UInt32(bitPattern: pid))
        case .call(let call):
            writer.u8(Tag.call.rawValue)
            writer.u64(call.id)
            writer.optional(call.key) { $0.string($1) }
            writer.optional(call.context) { $0.secret($1) }
            writer.u32(call.route)
            writer.string(call.instance)
            call.request.write(to: &writer)
        case .answer(let id, let result):
            writer.u8(Tag.answer.rawValue)
            writer.u64(id)
            result.write(to: &writer)
        case .settle(let key):
            writer.u8(Tag.settle.rawValue)
            writer.string(key)
        case .instances(let id, let version, let instances):
            writer.u8(Tag.instances.rawValue)
            writer.u64(id)
            writer.u64(version)
            Self.write(instances, to: &writer)
        case .instancesReady(let id, let unavailable):
            writer.u8(Tag.instancesReady.rawValue)
            writer.u64(id)
            writer.u32(UInt32(unavailable.count))
            for problem in unavailable {
                writer.string(problem.key)
                writer.string(problem.problem)
            }
        }
        return writer.bytes
    }

    private static func write(_ instances: [Instance], to writer: inout WireWriter) {
        writer.u32(UInt32(instances.count))
        for instance in instances {
            writer.u32(instance.route)
            writer.string(instance.name)
            writer.string(instance.kind)
            writer.u32(UInt32(clamping: instance.concurrency))
            writer.data(instance.options)
        }
    }

    private static func readInstances(from reader: inout WireReader) throws -> [Instance] {
        let count = try reader.u32()
        guard count <= 10_000 else { throw WireError.malformed("\(count) provider instances") }
        var instances: [Instance] = []
        for _ in 0..<count {
            instances.append(
                Instance(
                    route: try reader.u32(), name: try reader.string(), kind: try reader.string(),
                    concurrency: Int(try reader.u32()), options: try reader.data()))
        }
        return instances
    }

    static func decode(_ bytes: [UInt8]) throws -> CourierMessage {
        var reader = WireReader(bytes)
        let message: CourierMessage
        switch Tag(rawValue: try reader.u8()) {
        case .hello:
            let key = try reader.data()
            let version = try reader.u64()
            message = .hello(Hello(spoolPublicKey: key, version: version, instances: try readInstances(from: &reader)))
        case .ready: message = .ready(pid: Int32(bitPattern: try reader.u32()))
        case .call:
            message = .call(
                Call(
                    id: try reader.u64(), key: try reader.optional { try $0.string() },
                    context: try reader.optional { try $0.secret() }, route: try reader.u32(),
                    instance: try reader.string(), request: try PreparedRequest.read(from: &reader)))
        case .answer: message = .answer(id: try reader.u64(), try CallResult.read(from: &reader))
        case .settle: message = .settle(key: try reader.string())
        case .instances:
            message = .instances(id: try reader.u64(), version: try reader.u64(), try readInstances(from: &reader))
        case .instancesReady:
            let id = try reader.u64()
            let count = try reader.u32()
            guard count <= 10_000 else { throw WireError.malformed("\(count) problems") }
            var unavailable: [ProviderConfigurationError] = []
            for _ in 0..<count {
                unavailable.append(ProviderConfigurationError(key: try reader.string(), problem: try reader.string()))
            }
            message = .instancesReady(id: id, unavailable: unavailable)
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

    /// Wipes the answer's body once nobody needs it (it may hold tokens); this value keeps its
    /// status and headers. A copy kept elsewhere is not touched (`Array.wipe`).
    mutating func wipe() {
        guard case .answer(var answer) = self else { return }
        self = .answer(HTTPAnswer(status: answer.status, headers: answer.headers, body: []))
        answer.body.wipe()
    }

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
            writer.string(failure.code.rawValue)
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
            guard count <= HTTPAnswer.maximumHeaderFields else { throw WireError.malformed("\(count) headers") }
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
                    kind: kind, code: .init(rawValue: try reader.string()), message: try reader.string(),
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
