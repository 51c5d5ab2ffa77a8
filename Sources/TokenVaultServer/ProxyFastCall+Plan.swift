import HTTPTypes
import TokenVaultCore

extension ProxyFastCall.Plan {
    /// The call, if every rule the router would apply already says yes: the caller and its groups
    /// are known (`TokenFastPath.knownCaller`) and give `credential:use`, the credential reads without waiting and its token needs
    /// no refresh first, the instance lists the target in `api_base_urls` and is not DPoP, the
    /// body is at most `proxy.replay_body_bytes` (and `proxy.max_request_bytes`), and the caller
    /// has a free slot (`limits.max_proxy_calls_per_uid`, taken here). Nil sends the request to
    /// the router, which answers it, refusals included.
    /// `id`: the credential `path` names (`FastTarget.proxyCredentialID`).
    static func make(
        _ api: VaultAPI, caller: (peer: PeerCredentials, groups: Set<UInt32>)?, id: CredentialID,
        method: HTTPRequest.Method, path: String,
        fields: HTTPFields, bodyLength: Int
    ) -> Self? {
        let proxy = api.options.proxy
        guard VaultAPI.proxyMethods.contains(method),
            bodyLength <= min(proxy.replayBodyBytes, proxy.maximumRequestBytes),
            let upstream = api.options.upstream,
            let (peer, groups) = caller,
            api.policy.allows(uid: peer.uid, groups: groups, .credentialUse, in: id.namespace),
            let credential = try? api.vault.credentialWithoutWaiting(id, opening: [.accessToken]),
            TokenReadVerdict(
                credential.metadata, minimumTTL: Double(proxy.minimumTTLSeconds), now: api.vault.clock.now,
                canRefresh: api.engine != nil) == .serve,
            let settings = api.vault.providers.settings[credential.metadata.provider],
            !settings.apiBases.isEmpty, !settings.dpop,
            let target = try? api.proxyTarget(
                path: path, absoluteURL: fields[.tokenVaultUpstreamURL], chosenBase: fields[.tokenVaultUpstreamBase],
                id: id, bases: settings.apiBases, provider: settings.name),
            let transport = try? upstream.transport(for: settings),
            api.limiter.admitProxyCall(uid: peer.uid)
        else {
            api.metrics.recordProxyFastPath(answered: false)
            return nil
        }
        api.metrics.recordProxyFastPath(answered: true)
        return .init(
            peer: peer, id: id, provider: settings.name, method: method, target: target, transport: transport,
            forwarded: ProxyHeaders.forward(fields),
            closesConnection: fields[values: .connection].contains { ProxyHeaders.says(close: $0) },
            route: ProxyFastCall.route(of: path), credential: credential)
    }
}

extension ProxyFastCall {
    /// The route template the router records a proxied call under: `…/proxy`, or `…/proxy/**`
    /// with a path after it.
    static func route(of path: String) -> String {
        // Something after the fifth segment's `/`, before any query: what splitting the path at
        // `/` (empty segments dropped, at most five splits) would see, without the arrays.
        var segments = 0
        var inSegment = false
        var afterFifth = false
        for byte in path.utf8 {
            if byte == UInt8(ascii: "?") { break }
            if afterFifth { return proxyRestRoute }
            if byte == UInt8(ascii: "/") {
                afterFifth = inSegment && segments == 5
                inSegment = false
            } else if !inSegment {
                inSegment = true
                segments += 1
            }
        }
        return proxyRoute
    }

    private static let proxyRoute = "/v1/credentials/{namespace}/{name}/proxy"
    private static let proxyRestRoute = proxyRoute + "/**"
}
