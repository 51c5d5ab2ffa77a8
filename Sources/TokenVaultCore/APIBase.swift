/// One upstream base a provider instance's credentials may be used against through the proxy
/// (`providers.<name>.api_base_urls`): scheme, host, port and path prefix. A URL is inside it
/// when all four match, the prefix as whole segments (`/v1` holds `/v1` and `/v1/x`, not `/v10`).
public struct APIBase: Sendable, Equatable, CustomStringConvertible {
    public let origin: UpstreamURL
    /// Without a trailing `/` (empty for the root).
    public let pathPrefix: String
    /// The audience calls under this base are made for: the proxy sends a token derived for it
    /// by RFC 8693 token exchange instead of the credential's own. Nil: the credential's token.
    public let audience: String?

    public init(parsing text: String, audience: String? = nil) throws(UpstreamURLProblem) {
        self.audience = audience
        let url = try UpstreamURL(parsing: text)
        guard url.query == nil else {
            throw UpstreamURLProblem("'\(text.prefix(200))': a base has no ?query")
        }
        origin = url
        pathPrefix = url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
    }

    public var description: String { origin.origin + pathPrefix }

    public func contains(_ url: UpstreamURL) -> Bool {
        guard url.scheme == origin.scheme, url.host == origin.host, url.port == origin.port else { return false }
        guard url.path.hasPrefix(pathPrefix) else { return false }
        let after = url.path.dropFirst(pathPrefix.count)
        return after.isEmpty || after.hasPrefix("/")
    }

    /// `path` (with its query, as the caller wrote it after the proxy route) under this base.
    public func resolve(_ pathAndQuery: String) throws(UpstreamURLProblem) -> UpstreamURL {
        let relative = pathAndQuery.hasPrefix("/") ? pathAndQuery : "/" + pathAndQuery
        return try UpstreamURL(parsing: origin.origin + pathPrefix + relative)
    }
}

extension Array where Element == APIBase {
    /// The base that holds `url` most closely (the longest prefix), if any: a base nested in
    /// another decides, so an audience named for `/v2` is not lost to the root's entry.
    public func base(holding url: UpstreamURL) -> APIBase? {
        filter { $0.contains(url) }.max { $0.pathPrefix.count < $1.pathPrefix.count }
    }
}
