import Hummingbird
import TokenVaultCore

/// Turns every error into problem+json: `VaultError` by its code, Hummingbird's own HTTP
/// errors (404, 405, 413) by their status, anything else into a 500 whose detail names no
/// internal value. Also logs one line per request with its outcome.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = VaultRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let problem as ProblemDetails {
            throw problem
        } catch let error as VaultError {
            let problem = ProblemDetails(error)
            if problem.status == .internalServerError {
                context.logger.error(
                    "request failed", metadata: ["tokenvault.error.code": "\(error.code)", "error": "\(error.message)"])
            }
            throw problem
        } catch let error as HTTPError {
            let code =
                switch error.status {
                case .notFound: "not_found"
                case .methodNotAllowed: "method_not_allowed"
                case .contentTooLarge: "payload_too_large"
                default: "invalid_request"
                }
            throw ProblemDetails(error.status, code: code, detail: error.body ?? error.status.reasonPhrase)
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(type(of: error))"])
            throw ProblemDetails(
                .internalServerError, code: "internal_error", detail: "internal error; see the daemon log")
        }
    }
}
