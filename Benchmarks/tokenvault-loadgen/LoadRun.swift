import BenchmarkSupport
import Foundation
import Histogram
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct RunOptions: Sendable {
    enum Order: String, Sendable {
        /// Each request picks a credential uniformly at random.
        case random
        /// Connection i requests c<i>, c<i+N>, c<i+2N>, ... (wrapping): touches every credential.
        case sequential
    }

    var socketPath: String
    var connections: Int
    var duration: Double
    var warmup: Double
    var credentials: Int
    var namespace: String
    var order: Order
    /// Every request is `GET fixedPath` instead of a token (an HTTP-layer baseline).
    var fixedPath: String?
    /// The status that counts as success.
    var expectedStatus: Int
    /// Stop after this many requests in all (after the warm-up), or at the end of the duration,
    /// whichever comes first. With `sequential` order and `requests == credentials`, every
    /// credential is requested exactly once.
    var requests: Int?
    /// How the load generator drives its connections.
    enum Client: String, Sendable {
        /// One thread polls every connection (like redis-benchmark). Linux only.
        case events
        /// One blocking thread per connection.
        case threads
    }
    var client: Client
    /// Token reads, or writes: `PUT /v1/credentials/<ns>/c<k>` with a fixed token payload (the
    /// group-commit benchmark; each write commits with `synchronous=FULL`).
    var writes = false
    /// Each request carries `Connection: keep-alive`, which the daemon's event loop leaves to the
    /// router: the same request answered both ways, for what the loop's answer gains.
    var routed = false

    /// The header lines every request carries.
    var headerLines: String { "Host: localhost\r\n" + (routed ? "Connection: keep-alive\r\n" : "") }

    /// What the report calls the requests.
    var target: String {
        fixedPath ?? (writes ? "PUT /v1/credentials/\(namespace)/c<k>" : "/v1/credentials/\(namespace)/c<k>/token")
    }
}

/// Latencies are recorded in microseconds, 3 significant digits, up to a minute.
typealias LatencyHistogram = Histogram<UInt64>

func makeHistogram() -> LatencyHistogram {
    LatencyHistogram(
        lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
}

/// What one connection's thread measured after the warm-up.
struct WorkerResult: Sendable {
    var histogram: LatencyHistogram
    var succeeded = 0
    /// Responses other than 200.
    var failed = 0
    /// Connection-level failures (each followed by a reconnect).
    var broken = 0
    var firstError: String?

    /// A measured response: its latency if the status is the expected one, else a failure.
    mutating func record(status: Int, elapsedNanoseconds: UInt64, expected: Int) {
        if status == expected {
            succeeded += 1
            histogram.record(max(1, (elapsedNanoseconds + 500) / 1000))
        } else {
            failed += 1
            firstError = firstError ?? "HTTP status \(status), expected \(expected)"
        }
    }

    /// A measured request whose connection failed.
    mutating func recordBroken(_ error: any Error) {
        broken += 1
        firstError = firstError ?? "\(error)"
    }
}

/// State shared by the load threads: a start barrier, the schedule, and the results.
final class RunCoordinator: Sendable {
    let ready = DispatchSemaphore(value: 0)
    let go = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    /// (warm-up ends, run ends), monotonic nanoseconds; set before `go` is signalled.
    let schedule = Mutex<(warmupEnd: UInt64, end: UInt64)>((0, 0))
    let results = Mutex<[WorkerResult]>([])
    let setupErrors = Mutex<[String]>([])
}

func runLoad(_ options: RunOptions) {
    guard options.connections > 0, options.credentials > 0, options.duration > 0 else {
        fail("--connections, --credentials and --duration must be positive", exitCode: 64)
    }
    preflight(options)
    #if os(Linux)
        if options.client == .events { return runEventDriven(options) }
    #endif

    let coordinator = RunCoordinator()
    for worker in 0..<options.connections {
        let thread = Thread { loadThread(worker, options, coordinator) }
        thread.name = "load-\(worker)"
        thread.start()
    }
    for _ in 0..<options.connections { coordinator.ready.wait() }
    let setupErrors = coordinator.setupErrors.withLock { $0 }
    let begin = monotonicNanoseconds()
    let warmupEnd = begin + UInt64(options.warmup * 1e9)
    let end = warmupEnd + UInt64(options.duration * 1e9)
    coordinator.schedule.withLock { $0 = (warmupEnd, end) }
    let cpuBefore = processCPUSeconds()
    var cpuAtWarmupEnd = cpuBefore
    for _ in 0..<options.connections { coordinator.go.signal() }
    if options.warmup > 0 {
        let (seconds, fraction) = modf(options.warmup)
        var pause = timespec(tv_sec: Int(seconds), tv_nsec: Int(fraction * 1e9))
        var left = timespec()
        while nanosleep(&pause, &left) != 0 && errno == EINTR { pause = left }
        cpuAtWarmupEnd = processCPUSeconds()
    }
    for _ in 0..<options.connections { coordinator.finished.wait() }
    let measured = Double(monotonicNanoseconds() - warmupEnd) / 1e9
    let clientCPU = processCPUSeconds() - cpuAtWarmupEnd
    guard setupErrors.isEmpty else { fail("could not connect: \(setupErrors[0])") }

    var merged = makeHistogram()
    var succeeded = 0
    var failed = 0
    var broken = 0
    var firstError: String?
    for result in coordinator.results.withLock({ $0 }) {
        merged.add(result.histogram)
        succeeded += result.succeeded
        failed += result.failed
        broken += result.broken
        firstError = firstError ?? result.firstError
    }
    // From the end of the warm-up until the last thread finished its last request.
    let throughput = Double(succeeded) / max(measured, 1e-9)
    report(
        options, histogram: merged, succeeded: succeeded, failed: failed, broken: broken, throughput: throughput,
        measured: measured, clientCPU: clientCPU)
    if let firstError { print("first error: \(firstError)") }
}

/// One request before the run: a setup problem (no credentials, 403, wrong socket) stops here
/// with the server's answer instead of producing a table of errors.
private func preflight(_ options: RunOptions) {
    do {
        let connection = try HTTPConnection(socketPath: options.socketPath)
        connection.keepBody = true
        let path = options.fixedPath ?? "/v1/credentials/\(options.namespace)/c0/token"
        let request = Array("GET \(path) HTTP/1.1\r\n\(options.headerLines)\r\n".utf8)
        let status = try request.withUnsafeBytes { try connection.exchange($0) }
        guard status == options.expectedStatus else {
            fail(
                "preflight GET \(path) answered \(status), expected \(options.expectedStatus): "
                    + String(decoding: connection.lastBody.prefix(500), as: UTF8.self))
        }
    } catch {
        fail("preflight request failed: \(error)")
    }
}

private func loadThread(_ worker: Int, _ options: RunOptions, _ coordinator: RunCoordinator) {
    var result = WorkerResult(histogram: makeHistogram())
    defer {
        coordinator.results.withLock { $0.append(result) }
        coordinator.finished.signal()
    }
    let connection: HTTPConnection
    do {
        connection = try HTTPConnection(socketPath: options.socketPath)
    } catch {
        coordinator.setupErrors.withLock { $0.append("\(error)") }
        coordinator.ready.signal()
        coordinator.go.wait()
        return
    }
    coordinator.ready.signal()
    coordinator.go.wait()
    let (warmupEnd, end) = coordinator.schedule.withLock { $0 }

    var requests = RequestSequence(options, worker: worker)
    // This thread's share of --requests (measured requests only).
    let quota = options.requests.map { share(of: $0, worker: worker, workers: options.connections) }
    var measuredRequests = 0

    while true {
        let started = monotonicNanoseconds()
        if started >= end { break }
        if started >= warmupEnd {
            if let quota, measuredRequests >= quota { break }
            measuredRequests += 1
        }
        let status: Int
        do {
            status = try requests.withNext { try connection.exchange($0) }
        } catch {
            if started >= warmupEnd { result.recordBroken(error) }
            do { try connection.reconnect() } catch {
                result.firstError = result.firstError ?? "reconnect: \(error)"
                return
            }
            continue
        }
        let elapsed = monotonicNanoseconds() - started
        guard started >= warmupEnd else { continue }
        result.record(status: status, elapsedNanoseconds: elapsed, expected: options.expectedStatus)
    }
}

/// Worker `worker`'s part of `total` requests split over `workers`.
func share(of total: Int, worker: Int, workers: Int) -> Int {
    total / workers + (worker < total % workers ? 1 : 0)
}

/// One connection's requests, each built in place in one buffer: a fixed prefix, the
/// credential number (random, or walking sequentially from the worker's index), a fixed suffix;
/// or the same fixed path every time.
struct RequestSequence {
    private let options: RunOptions
    private let prefix: [UInt8]
    private let suffix: [UInt8]
    private var bytes: [UInt8]
    private var generator: SplitMix64
    private var sequence: Int

    init(_ options: RunOptions, worker: Int) {
        self.options = options
        if options.writes {
            let body =
                #"{"provider":"tinkoff-id","token":{"access_token":"t.bench-write","refresh_token":"bench-refresh","expires_in":3600}}"#
            prefix = Array("PUT /v1/credentials/\(options.namespace)/c".utf8)
            suffix = Array(
                " HTTP/1.1\r\n\(options.headerLines)Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                    .utf8)
        } else {
            prefix = Array("GET /v1/credentials/\(options.namespace)/c".utf8)
            suffix = Array("/token HTTP/1.1\r\n\(options.headerLines)\r\n".utf8)
        }
        bytes = [UInt8](repeating: 0, count: prefix.count + 20 + suffix.count)
        bytes.replaceSubrange(0..<prefix.count, with: prefix)
        if let path = options.fixedPath { bytes = Array("GET \(path) HTTP/1.1\r\n\(options.headerLines)\r\n".utf8) }
        generator = SplitMix64(seed: 0x7F4A_7C15 &+ UInt64(worker) &* 0x9E37_79B9)
        sequence = worker % options.credentials
    }

    /// Calls `body` with the next request's bytes.
    mutating func withNext<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        guard options.fixedPath == nil else { return try bytes.withUnsafeBytes(body) }
        let credential: Int
        switch options.order {
        case .random: credential = Int(generator.next() % UInt64(options.credentials))
        case .sequential:
            credential = sequence
            sequence += options.connections
            if sequence >= options.credentials { sequence %= options.credentials }
        }
        let (prefix, suffix) = (self.prefix, self.suffix)
        let length = bytes.withUnsafeMutableBufferPointer { bytes in
            var position = prefix.count + writeDecimal(credential, into: bytes, at: prefix.count)
            for byte in suffix {
                bytes[position] = byte
                position += 1
            }
            return position
        }
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
    }
}

/// Writes `value`'s decimal digits at `offset`; returns how many.
@inline(__always)
private func writeDecimal(_ value: Int, into bytes: UnsafeMutableBufferPointer<UInt8>, at offset: Int) -> Int {
    var digits = 1
    var rest = value / 10
    while rest > 0 {
        digits += 1
        rest /= 10
    }
    var remaining = value
    for index in stride(from: offset + digits - 1, through: offset, by: -1) {
        bytes[index] = UInt8(48 + remaining % 10)
        remaining /= 10
    }
    return digits
}

func report(
    _ options: RunOptions, histogram: LatencyHistogram, succeeded: Int, failed: Int, broken: Int, throughput: Double,
    measured: Double, clientCPU: Double
) {
    let p50 = histogram.valueAtPercentile(50)
    let p99 = histogram.valueAtPercentile(99)
    let p999 = histogram.valueAtPercentile(99.9)
    let maximum = histogram.max
    let clientCores = clientCPU / max(measured, 1e-9)
    print(
        """
        GET \(options.target) over \(options.socketPath)
          connections      \(options.connections) (keep-alive, \(options.client == .events ? "one polling thread for all" : "one blocking thread each"))
          credentials      \(options.fixedPath == nil ? "\(options.credentials), \(options.order.rawValue) order" : "none (fixed path)")
          measured         \(format(measured, decimals: 2)) s after \(format(options.warmup, decimals: 1)) s warm-up
          requests         \(succeeded) ok, \(failed) not \(options.expectedStatus), \(broken) connection errors
          throughput       \(format(throughput, decimals: 0)) req/s
          latency (us)     p50 \(p50)  p99 \(p99)  p99.9 \(p999)  max \(maximum)  mean \(format(histogram.mean, decimals: 1))
          client CPU       \(format(clientCores, decimals: 2)) cores (this load generator, user + system)
        """)
    print(
        "RESULT path=\(options.fixedPath ?? "token") connections=\(options.connections) credentials=\(options.credentials) order=\(options.order.rawValue) "
            + "duration_s=\(format(measured, decimals: 2)) requests=\(succeeded) "
            + "rps=\(format(throughput, decimals: 0)) p50_us=\(p50) p99_us=\(p99) p999_us=\(p999) max_us=\(maximum) "
            + "mean_us=\(format(histogram.mean, decimals: 1)) errors=\(failed + broken) "
            + "client_cores=\(format(clientCores, decimals: 2)) client=\(options.client.rawValue)")
}
