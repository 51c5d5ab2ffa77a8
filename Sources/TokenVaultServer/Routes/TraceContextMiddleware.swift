import HTTPTypes
import Hummingbird
import TokenVaultCore

/// Puts the caller's trace id (`traceparent`) in every log line of the request, beside the
/// request id (the daemon's lines about a call can be found from the caller's trace), and makes
/// it `TraceContext.current` for what the request writes (a webhook delivery it causes carries
/// it). A header that is not valid trace context is ignored, as the specification asks.
struct TraceContextMiddleware: RouterMiddleware {
    typealias Context = VaultRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let header = request.headers[.traceparent], let trace = TraceContext(traceparent: header) else {
            return try await next(request, context)
        }
        var context = context
        context.logger[metadataKey: "tokenvault.trace.id"] = .string(trace.traceID)
        return try await TraceContext.$current.withValue(trace) { try await next(request, context) }
    }
}

extension HTTPField.Name {
    static let traceparent = Self("traceparent")!
}
