/// A one-shot misbehaviour for the next request to an endpoint (`TestOAuthServer.script` for the
/// token endpoint, `scriptRevocation` for the revocation endpoint). Steps are consumed first-in
/// first-out, one per request, whatever the request says; with an empty queue requests are served
/// normally. "Handled normally" below means exactly what an unscripted request would get,
/// checks included, and with the same effect on the tokens.
public enum ScriptedResponse: Sendable {
    /// Answers `status` with an error body in the configured `ErrorShape`; nothing is handled.
    /// `retryAfter` is sent verbatim as `Retry-After` (seconds or an HTTP date).
    case error(status: Int, code: String, description: String = "scripted error", retryAfter: String? = nil)
    /// Answers `status` with an HTML page (`text/html`), as a load balancer or proxy would.
    case htmlError(status: Int)
    /// Waits, then handles the request normally (when the wait ends, even if the client has left,
    /// as a slow server would), for client timeouts.
    case delay(seconds: Double)
    /// Handles the request normally (a refresh spends the old token and mints a new pair), then
    /// closes the connection without sending a byte: the "unknown outcome" of a lost answer.
    case rotateThenDrop
    /// Answers 200 `application/json` with a truncated JSON body. With `rotating`, the request is
    /// handled normally first, so a refresh has spent the old token.
    case malformedJSON(rotating: Bool)
    /// Answers 200 with a compact JWT as the body (a Sber quirk) instead of JSON. Nothing is handled.
    case compactJWTBody
    /// Answers exactly this. `Content-Length` is added unless given.
    case raw(status: Int, headers: [String: String], body: String)
}
