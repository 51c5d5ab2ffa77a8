import Hummingbird

/// Records each request's route template (never the concrete path: ids stay out of metrics),
/// method, status and duration.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = VaultRequestContext
    let metrics: APIMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            record(request, context, status: Int(response.status.code), since: start)
            return response
        } catch let error as any HTTPResponseError {
            record(request, context, status: Int(error.status.code), since: start)
            throw error
        } catch {
            record(request, context, status: 500, since: start)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, status: Int, since start: ContinuousClock.Instant) {
        metrics.record(
            route: context.endpointPath ?? "unmatched", method: request.method.rawValue, status: status,
            duration: ContinuousClock.now - start)
    }
}
