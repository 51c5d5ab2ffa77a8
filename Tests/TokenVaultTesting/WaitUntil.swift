/// Polls `condition` every 20 ms until it holds (true) or `within` seconds pass (false): for
/// outcomes that happen in the background at a time the test does not control.
public func waitUntil(within seconds: Double = 5, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

extension Array {
    /// `map` with an async transform, one element after the other.
    public func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}

/// `Result(catching:)` for a body that awaits.
public func caught<T>(_ body: () async throws -> T) async -> Result<T, any Error> {
    do { return .success(try await body()) } catch { return .failure(error) }
}
