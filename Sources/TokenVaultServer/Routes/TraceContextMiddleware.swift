import HTTPTypes
import Hummingbird
import TokenVaultCore

/// Puts the caller's trace id (`traceparent`) in every log line of the request, beside the
/// request id: the daemon's lines about a call can be found from the caller's trace. A header
/// that is not valid trace context is ignored, as the specification asks.
struct TraceContextMiddleware: RouterMiddleware {
    typealias Context = VaultRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        if let header = request.headers[.traceparent], let trace = TraceContext(traceparent: header) {
            context.logger[metadataKey: "tokenvault.trace.id"] = .string(trace.traceID)
        }
        return try await next(request, context)
    }
}

extension HTTPField.Name {
    static let traceparent = Self("traceparent")!
}
