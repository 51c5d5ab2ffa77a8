import Foundation
import Hummingbird
import NIOCore
import Synchronization

/// A loopback webhook endpoint for the tests (Hummingbird on 127.0.0.1): `POST /hook` records
/// each delivery (its three Standard Webhooks headers, its trace context and its body) and answers
/// as `mode` says.
/// It can be stopped and started again on the same port (an endpoint that is down, then back).
public final class TestWebhookReceiver: Sendable {
    public struct Delivery: Sendable, Equatable {
        public var id: String
        public var timestamp: String
        public var signature: String
        public var body: [UInt8]
        /// When it arrived.
        public var at: Date
        /// The W3C trace context it carried, if any.
        public var traceparent: String? = nil

        /// The body's `type`.
        public var type: String { (json["type"] as? String) ?? "" }
        /// The body's `data.id` (the credential), if any.
        public var credential: String? { (json["data"] as? [String: Any])?["id"] as? String }
        public var data: [String: Any] { (json["data"] as? [String: Any]) ?? [:] }
        public var text: String { String(decoding: body, as: UTF8.self) }

        private var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
        }

        public static func == (lhs: Delivery, rhs: Delivery) -> Bool {
            lhs.id == rhs.id && lhs.timestamp == rhs.timestamp && lhs.signature == rhs.signature && lhs.body == rhs.body
        }
    }

    public enum Mode: Sendable, Equatable {
        case accept
        /// Answers this status (and records nothing).
        case refuse(Int)
        /// Records the delivery, then answers 200 after this many seconds.
        case hold(Double)
    }

    public var port: Int { state.withLock { $0.port } }
    public var url: String { "http://127.0.0.1:\(port)/hook" }
    /// Deliveries answered 2xx or held, in arrival order.
    public var deliveries: [Delivery] { state.withLock { $0.deliveries } }
    /// Every request that arrived, whatever it was answered.
    public var requests: Int { state.withLock { $0.requests } }
    public var mode: Mode {
        get { state.withLock { $0.mode } }
        set { state.withLock { $0.mode = newValue } }
    }

    private struct State {
        var port = 0
        var deliveries: [Delivery] = []
        var requests = 0
        var mode = Mode.accept
        var running: LoopbackApplication?
    }

    private let state = Mutex(State())

    public init(mode: Mode = .accept) async throws {
        self.mode = mode
        try await start()
    }

    /// Listens again (on the port it had, if it had one).
    public func start() async throws {
        let router = Router()
        router.post("/hook") { [self] request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            let delivery = Delivery(
                id: request.headers[.init("webhook-id")!] ?? "",
                timestamp: request.headers[.init("webhook-timestamp")!] ?? "",
                signature: request.headers[.init("webhook-signature")!] ?? "",
                body: Array(body.readableBytesView), at: Date(), traceparent: request.headers[.init("traceparent")!])
            let mode = state.withLock { state -> Mode in
                state.requests += 1
                if case .refuse = state.mode { return state.mode }
                state.deliveries.append(delivery)
                return state.mode
            }
            switch mode {
            case .accept: return Response(status: .noContent)
            case .refuse(let status): return Response(status: .init(code: status))
            case .hold(let seconds):
                try await Task.sleep(for: .seconds(seconds))
                return Response(status: .ok)
            }
        }
        let application = try await LoopbackApplication.start(router, port: port, label: "test-webhook-receiver")
        state.withLock { state in
            state.port = application.port
            state.running = application
        }
    }

    /// Stops listening: deliveries are refused at the connection until `start`.
    public func stop() async {
        await state.withLock { state in
            defer { state.running = nil }; return state.running
        }?.stop()
    }

    /// The deliveries of `type`.
    public func deliveries(of type: String) -> [Delivery] { deliveries.filter { $0.type == type } }
}
