import Foundation
import Logging
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

@testable import TokenVaultCourier

#if canImport(Glibc)
    import Glibc
#endif

/// The courier's routes as instance sets arrive: the newest set wins, and a call keeps the route
/// it named even when a set read right after it retires that route.
@Suite struct CourierStateTests {
    static let logger = Logger(label: "courier-state-tests")

    /// An instance whose endpoint refuses at once (loopback, nothing listening).
    static func instance(_ route: UInt32, _ name: String) -> CourierMessage.Instance {
        .init(
            route: route, name: name, kind: "oauth2", concurrency: 1,
            options: Array(#"{"client_id":"c","token_endpoint":"http://127.0.0.1:9/token"}"#.utf8))
    }

    static func call(_ id: UInt64, route: UInt32) -> CourierMessage.Call {
        .init(
            id: id, key: nil, context: nil, route: route, instance: "acme",
            request: PreparedRequest(method: "POST", url: "http://127.0.0.1:9/token", headers: [], body: []))
    }

    /// One frame, written whole before returning.
    static func write(_ message: CourierMessage, to descriptor: Int32) {
        let payload = message.encoded()
        var frame = [UInt8]()
        withUnsafeBytes(of: UInt32(payload.count).bigEndian) { frame += $0 }
        frame += payload
        var sent = 0
        while sent < frame.count {
            let count = frame.withUnsafeBytes { send(descriptor, $0.baseAddress! + sent, frame.count - sent, 0) }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// Two publishes crossing on the way: the older set, arriving last, does not undo the newer.
    @Test func anOlderInstanceSetArrivingLateIsNotApplied() async {
        let state = CourierState()
        #expect(state.replaceInstances([Self.instance(1, "acme")], version: 1, logger: Self.logger).isEmpty)
        _ = state.replaceInstances(
            [Self.instance(1, "acme"), Self.instance(2, "new")], version: 3, logger: Self.logger)
        _ = state.replaceInstances([Self.instance(1, "acme")], version: 2, logger: Self.logger)
        #expect(state.take(Self.call(1, route: 2)) != nil, "the route of the newer set was retired")
        await state.shutdown()
    }

    /// A call followed at once by a set without its route: the call still goes out on its route
    /// (it took it when its frame was read), and fails as the network refuses, not as
    /// `courier_no_transport`.
    @Test func aCallKeepsItsRouteWhenTheNextFrameRetiresIt() async throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        let (courierEnd, daemonEnd) = (pair[0], pair[1])
        // The courier's writer closes its end itself, once what it queued is written.
        let courierWriter = FrameWriter(descriptor: courierEnd)
        defer {
            courierWriter.close()
            close(daemonEnd)
        }
        // Written here and now, before the write side is shut (a `FrameWriter` queues them).
        Self.write(.call(Self.call(1, route: 1)), to: daemonEnd)
        Self.write(.instances(id: 2, version: 2, []), to: daemonEnd)
        shutdown(daemonEnd, Int32(SHUT_WR))

        let state = CourierState()
        _ = state.replaceInstances([Self.instance(1, "acme")], version: 1, logger: Self.logger)
        // Both sides block in their reads: on a thread of their own, not one of the concurrency
        // pool's (the call itself is sent on the pool; a blocked pool stalled other tests' timers).
        let result = try await offThePool { () throws -> CallResult? in
            var reader = FrameReader(descriptor: courierEnd)
            Courier.serve(&reader, writer: courierWriter, state: state, logger: Self.logger)
            var answers = FrameReader(descriptor: daemonEnd)
            var result: CallResult?
            while result == nil, let message = try answers.receive() {
                if case .answer(1, let answered) = message { result = answered }
            }
            return result
        }
        guard case .failure(let failure)? = result else {
            Issue.record("no failure answered: \(String(describing: result))")
            return
        }
        #expect(failure.code != "courier_no_transport", "\(failure)")
        await state.shutdown()
    }
}
