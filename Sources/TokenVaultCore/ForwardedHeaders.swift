/// Which of a caller's request headers a proxied call carries upstream: an allowlist, so that a
/// header some server or gateway reads as routing (`X-Original-URI`, `X-Envoy-Original-Path`, and
/// whatever the next one is called) stays behind without anyone having to know its name. The
/// list holds what API calls commonly need (content negotiation, conditional requests, ranges,
/// idempotency keys, trace context); an instance adds the headers its API needs with
/// `proxy_headers`, except the ones that are never forwarded (`refusal(of:)`). Pure.
public enum ForwardedHeaders {
    /// Lower-cased names forwarded for every instance.
    public static let standard: Set<String> = [
        "accept", "accept-language", "cache-control", "content-type", "content-encoding",
        "content-language", "content-disposition", "content-digest", "repr-digest", "digest", "if-match",
        "if-none-match", "if-modified-since", "if-unmodified-since", "pragma", "prefer",
        "user-agent", "idempotency-key", "x-idempotency-key", "x-request-id", "x-correlation-id", "traceparent",
        "tracestate", "baggage",
    ]

    /// Why `name` (lower-cased) may never be forwarded, or nil when an instance may add it: the
    /// caller's own credentials (the vault attaches the credential's), the headers that frame
    /// the message or the connection (the HTTP client writes its own), the vault's own, and the
    /// headers proxies and gateways read as the request's real path, method or origin.
    public static func refusal(of name: String) -> String? {
        if credentials.contains(name) { return "it carries the caller's own credentials" }
        if framing.contains(name) || name.hasPrefix("proxy-") {
            return "it frames the message or the connection, which the vault's HTTP client writes itself"
        }
        if name.hasPrefix("tokenvault-") { return "it is the vault's own" }
        if name == "accept-encoding" {
            return "answers come uncompressed, so that the vault can keep the token out of them"
        }
        if name == "range" || name == "if-range" {
            return "an answer in parts could carry a token in pieces, which the vault would not recognise"
        }
        if routing.contains(name) || routingPrefixes.contains(where: name.hasPrefix) {
            return "proxies and gateways read it as the request's path, method or origin"
        }
        return nil
    }

    private static let credentials: Set<String> = ["authorization", "cookie", "dpop"]
    private static let framing: Set<String> = [
        "host", "content-length", "transfer-encoding", "expect", "connection", "keep-alive", "te", "trailer",
        "trailers", "upgrade",
    ]
    private static let routing: Set<String> = [
        "forwarded", "x-original-url", "x-original-uri", "x-rewrite-url", "x-http-method-override", "x-http-method",
        "x-method-override", "x-real-ip", "x-client-ip", "true-client-ip", "client-ip",
    ]
    private static let routingPrefixes = ["x-forwarded-", "x-envoy-", "x-original-"]
}
