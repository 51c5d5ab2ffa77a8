/// Polls `condition` every 20 ms until it holds (true) or `within` seconds pass (false): for
/// outcomes that happen in the background at a time the test does not control.
public func waitUntil(within seconds: Double = 5, _ condition: () throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try condition()
}
