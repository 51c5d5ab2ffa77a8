/// Runs `body` with `resource` (a server a test started), then stops it and waits for that,
/// however `body` ends. A `defer` cannot await, and a stop started in a `Task` from one is never
/// waited for: the next test could start while the last one's server was still shutting down.
public func withStopping<Resource, Result>(
    _ resource: Resource, stop: (Resource) async -> Void, _ body: (Resource) async throws -> Result
) async throws -> Result {
    let result: Result
    do {
        result = try await body(resource)
    } catch {
        await stop(resource)
        throw error
    }
    await stop(resource)
    return result
}
