#if os(Linux)
    import Glibc

    /// The default client: one thread drives every connection through `poll`, one request in
    /// flight on each, as `redis-benchmark` drives Redis. With one blocking thread per connection
    /// instead, 16 client threads and the daemon's event loops share two cores, and the run
    /// measures the scheduler's time slices as much as the daemon (docs/benchmarks.md).
    func runEventDriven(_ options: RunOptions) {
        var connections: [HTTPConnection] = []
        for _ in 0..<options.connections {
            do {
                connections.append(try HTTPConnection(socketPath: options.socketPath))
            } catch {
                fail("could not connect: \(error)")
            }
        }
        var polled = connections.map { pollfd(fd: $0.fileDescriptor, events: Int16(POLLIN), revents: 0) }
        var requests = (0..<options.connections).map { RequestSequence(options, worker: $0) }
        var started = [UInt64](repeating: 0, count: options.connections)
        var measuredRequests = [Int](repeating: 0, count: options.connections)
        let quotas = (0..<options.connections).map { worker in
            options.requests.map { share(of: $0, worker: worker, workers: options.connections) }
        }
        var open = options.connections
        var result = WorkerResult(histogram: makeHistogram())
        var lastCompletion: UInt64 = 0

        let begin = monotonicNanoseconds()
        let warmupEnd = begin + UInt64(options.warmup * 1e9)
        let end = warmupEnd + UInt64(options.duration * 1e9)
        var cpuAtWarmupEnd = processCPUSeconds()
        var warmedUp = options.warmup <= 0

        /// Sends connection `index`'s next request, or retires the connection when the run is over.
        func sendNext(_ index: Int) {
            let now = monotonicNanoseconds()
            if now >= warmupEnd, !warmedUp {
                warmedUp = true
                cpuAtWarmupEnd = processCPUSeconds()
            }
            if now >= warmupEnd {
                if now >= end || quotas[index].map({ measuredRequests[index] >= $0 }) == true {
                    retire(index)
                    return
                }
                measuredRequests[index] += 1
            }
            started[index] = now
            do {
                try requests[index].withNext { try connections[index].sendRequest($0) }
            } catch {
                broke(index, error)
            }
        }
        func retire(_ index: Int) {
            polled[index].fd = -1  // poll skips negative descriptors
            open -= 1
        }
        func broke(_ index: Int, _ error: any Error) {
            result.recordBroken(error)
            retire(index)
        }

        for index in connections.indices { sendNext(index) }
        while open > 0 {
            let ready = poll(&polled, nfds_t(polled.count), 1000)
            if ready < 0 {
                if errno == EINTR { continue }
                fail("poll: \(String(cString: strerror(errno)))")
            }
            for index in polled.indices where polled[index].fd >= 0 && polled[index].revents != 0 {
                let status: Int?
                do {
                    try connections[index].receiveAvailable()
                    status = try connections[index].takeResponse()
                } catch {
                    broke(index, error)
                    continue
                }
                guard let status else { continue }
                let finished = monotonicNanoseconds()
                if started[index] >= warmupEnd {
                    lastCompletion = finished
                    result.record(
                        status: status, elapsedNanoseconds: finished - started[index], expected: options.expectedStatus)
                }
                sendNext(index)
            }
        }

        // From the end of the warm-up until the last measured response.
        let measured = Double(max(lastCompletion, warmupEnd) - warmupEnd) / 1e9
        let clientCPU = processCPUSeconds() - cpuAtWarmupEnd
        report(
            options, histogram: result.histogram, succeeded: result.succeeded, failed: result.failed,
            broken: result.broken, throughput: Double(result.succeeded) / max(measured, 1e-9), measured: measured,
            clientCPU: clientCPU)
        if let firstError = result.firstError { print("first error: \(firstError)") }
    }
#endif
