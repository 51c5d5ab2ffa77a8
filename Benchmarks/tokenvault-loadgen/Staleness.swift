#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

struct StalenessOptions {
    var writer: String
    var reader: String
    var rounds: Int
    var credentials: Int
}

/// How long a node serves a token after another node replaced it (several daemons on one
/// PostgreSQL vault): per round, the reader node reads a credential (so its row is cached
/// there), the writer node replaces the credential's tokens (PUT: a new generation, the same
/// change notification as a refresh), and the reader is polled back to back until it serves the
/// new token. Prints the percentiles of the time from the PUT's response to the first read of the
/// new token.
func measureStaleness(_ options: StalenessOptions) {
    do {
        let writer = try HTTPConnection(socketPath: options.writer)
        let reader = try HTTPConnection(socketPath: options.reader)
        reader.keepBody = true
        func put(_ name: String, _ token: String) throws {
            let body = #"{"provider": "tinkoff-id", "token": {"access_token": "\#(token)", "expires_in": 3600}}"#
            let request =
                "PUT /v1/credentials/stale/\(name) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
            let status = try Array(request.utf8).withUnsafeBytes { try writer.exchange($0) }
            guard status == 200 || status == 201 else { fail("PUT stale/\(name) answered \(status)") }
        }
        func read(_ name: String) throws -> String {
            let request = "GET /v1/credentials/stale/\(name)/token HTTP/1.1\r\nHost: localhost\r\n\r\n"
            _ = try Array(request.utf8).withUnsafeBytes { try reader.exchange($0) }
            return String(decoding: reader.lastBody, as: UTF8.self)
        }
        for index in 0..<options.credentials { try put("c\(index)", "t.stale-seed-\(index)") }
        var delays: [Double] = []
        var polls = 0
        var timeouts = 0
        for round in 0..<options.rounds {
            let name = "c\(round % options.credentials)"
            _ = try read(name)  // cached on the reader node now
            let token = "t.stale-\(round)-\(UInt32.random(in: 0...UInt32.max))"
            try put(name, token)
            let written = monotonicNanoseconds()
            while true {
                polls += 1
                if try read(name).contains(token) {
                    delays.append(Double(monotonicNanoseconds() - written) / 1e6)
                    break
                }
                if monotonicNanoseconds() - written > 2_000_000_000 {
                    timeouts += 1
                    break
                }
            }
        }
        delays.sort()
        func percentile(_ share: Double) -> String {
            guard !delays.isEmpty else { return "n/a" }
            return format(delays[min(delays.count - 1, Int(Double(delays.count) * share))], decimals: 2)
        }
        print(
            "staleness over \(options.rounds) replacements (ms from the writer's response to the reader serving the "
                + "new token): p50 \(percentile(0.5)) p90 \(percentile(0.9)) p99 \(percentile(0.99)) "
                + "max \(percentile(1)); polls \(polls), timeouts (over 2 s) \(timeouts)")
        print(
            "RESULT rounds=\(options.rounds) p50_ms=\(percentile(0.5)) p99_ms=\(percentile(0.99)) "
                + "max_ms=\(percentile(1)) timeouts=\(timeouts)")
    } catch {
        fail("staleness run failed: \(error)")
    }
}
