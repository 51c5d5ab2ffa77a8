import HTTPTypes
import Hummingbird
import TokenVaultCore

/// Turns every error into problem+json: `VaultError` by its code, Hummingbird's own HTTP
/// errors by their status (a known path with another method becomes 405 with `Allow`),
/// anything else into a 500 whose detail names no internal value. Every response carries
/// the request id in `X-Request-Id`.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = VaultRequestContext
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            var response = try await next(request, context)
            response.headers[.requestID] = context.requestID
            return response
        } catch let problem as ProblemDetails {
            throw problem
        } catch let error as VaultError {
            if error.code.isInternal {
                context.logger.error(
                    "request failed", metadata: ["tokenvault.error.code": "\(error.code)", "error": "\(error.message)"])
            }
            throw ProblemDetails(error)
        } catch let error as HTTPError {
            let allowed = error.status == .notFound ? routes.methods(for: request.uri.path) : []
            if !allowed.isEmpty {
                throw ProblemDetails(
                    .methodNotAllowed,
                    detail: "\(request.method.rawValue) is not allowed here; use \(allowed.joined(separator: ", "))",
                    allowedMethods: allowed)
            }
            let code: VaultError.Code =
                switch error.status {
                case .notFound: .notFound
                case .methodNotAllowed: .methodNotAllowed
                case .contentTooLarge: .payloadTooLarge
                case .unsupportedMediaType: .unsupportedMediaType
                case let status where status.code >= 500: .internalError
                default: .invalidRequest
                }
            throw ProblemDetails(code, detail: error.body ?? error.status.reasonPhrase)
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(type(of: error))"])
            throw ProblemDetails(.internalError, detail: "internal error; see the daemon log")
        }
    }
}

extension HTTPField.Name {
    static let requestID = HTTPField.Name("X-Request-Id")!
}
