import Foundation
import Synchronization
import Testing
import TokenVaultCore
import TokenVaultLedger
import TokenVaultProviders
import TokenVaultServer
import TokenVaultTesting

/// The proxy against a loopback upstream: the token attached and never returned, the caller's
/// credentials stripped, the base list enforced, redirects returned, a refused token refreshed
/// and the call replayed once, bodies streamed both ways, the per-caller cap.
@Suite struct ProxyTests {
    /// A server with one `oauth2` credential `ns/a` whose instance lists the upstream's base,
    /// the upstream, the credential's access token, and the proxy's clients.
    private struct Fixture {
        let server: TestServer
        let upstream: TestUpstream
        let token: String

        /// An instance `name` listing `base`, and the credential `ns/<name>` through it.
        func addInstance(_ name: String, base: String, options: [String: JSONValue] = [:]) async throws {
            var settings = ProviderSettings(name: name, kind: "oauth2", options: options)
            settings.apiBases = [try APIBase(parsing: base + "/")]
            var table = server.fixture.vault.providers.settings
            table[name] = settings
            server.fixture.vault.install(ProviderTable(settings: table))
            _ = try await server.fixture.vault.put(
                try CredentialID(namespace: "ns", name: name),
                payload: try SamplePayloads.decode(SamplePayloads.oauth().json), provider: name)
        }

        func stop() async {
            await server.stop()
            await upstream.stop()
        }
    }

    private static func fixture(
        policy: AccessPolicy? = nil, engine: ((TestVault) -> any RefreshService)? = nil,
        accepts: @escaping @Sendable (String) -> Bool = { _ in true },
        configure: @escaping (inout VaultAPI.Options) -> Void = { _ in }
    ) async throws -> Fixture {
        let upstream = try await TestUpstream(accepts: accepts)
        let server = try await TestServer(
            policy: policy, makeEngine: engine,
            configure: configure)
        var settings = ProviderSettings(name: "oauth2", kind: "oauth2")
        settings.apiBases = [try APIBase(parsing: upstream.base + "/")]
        server.fixture.vault.install(
            ProviderTable(settings: ["oauth2": settings, "bare": .init(name: "bare", kind: "oauth2")]))
        let payload = SamplePayloads.oauth()
        _ = try await server.fixture.vault.put(
            try CredentialID("ns/a"), payload: try SamplePayloads.decode(payload.json), provider: "oauth2")
        return Fixture(server: server, upstream: upstream, token: payload.tokens[0])
    }

    @Test func theTokenIsAttachedAndWhatTheCallerSentForItselfIsNot() async throws {
        let fixture = try await Self.fixture()
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let (server, upstream, token) = (fixture.server, fixture.upstream, fixture.token)
            let response = try await server.request(
                "GET", "/v1/credentials/ns/a/proxy/echo?x=1",
                headers: [
                    "Authorization": "Basic c2VjcmV0", "Cookie": "session=1", "Proxy-Authorization": "x",
                    "Connection": "keep-alive, X-Hop", "X-Hop": "1", "Accept-Language": "ru", "TokenVault-Other": "no",
                    "X-Original-URI": "/admin", "X-Envoy-Original-Path": "/admin", "X-Unlisted": "1",
                    "Accept-Encoding": "gzip", "Range": "bytes=0-9", "If-Range": "\"v1\"",
                ])
            #expect(response.status == 200, "\(response.text)")
            #expect(response.headers["tokenvault-proxy"] == "upstream")
            #expect(response.headers["x-upstream"] == "yes")
            let echoed = response.json()
            #expect(echoed["path"] as? String == "/echo?x=1")
            let headers = echoed["headers"] as? [String: String] ?? [:]
            #expect(headers["authorization"] == "(present)")
            #expect(headers["accept-language"] == "ru")
            // Uncompressed, whatever the caller asked: the vault must see a token echoed back.
            #expect(headers["accept-encoding"] == "identity")
            for stripped in [
                "cookie", "proxy-authorization", "x-hop", "tokenvault-other", "x-original-uri", "x-envoy-original-path",
                "x-unlisted", "range", "if-range",
            ] {
                #expect(headers[stripped] == nil, "\(stripped) went upstream")
            }
            #expect(upstream.authorizations == ["Bearer \(token)"])

            // The absolute form, and the audit row (aggregated like token reads).
            let absolute = try await server.request(
                "POST", "/v1/credentials/ns/a/proxy", body: "{}",
                headers: ["TokenVault-Upstream-URL": upstream.base + "/echo"])
            #expect(absolute.status == 200 && absolute.json()["method"] as? String == "POST", "\(absolute.text)")
            let audit = try await server.request("GET", "/v1/admin/audit?credential=ns/a").json()
            let details = (audit["items"] as? [[String: Any]] ?? []).filter {
                $0["operation"] as? String == "credential.proxy"
            }
            .compactMap { $0["detail"] as? String }
            // Where each call went, path and all, but never its query (`?x=1`).
            #expect(
                details.sorted() == ["GET \(upstream.base)/echo 2xx", "POST \(upstream.base)/echo 2xx"], "\(details)")
            let metrics = try await server.request("GET", "/metrics").text
            #expect(
                metrics.contains(#"tokenvault_proxy_calls_total{provider="oauth2",status_class="2xx"} 2"#), "\(metrics)"
            )
            for answer in [response, absolute] {
                #expect(!answer.text.contains(token) && !"\(answer.headers)".contains(token))
            }
        }
    }

    /// An upstream that writes the token back into its answer's headers, as it came or
    /// percent-encoded in a URL: those headers stay behind, the others pass.
    @Test func headersThatCarryTheTokenBackAreNotReturned() async throws {
        let fixture = try await Self.fixture()
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let (server, token) = (fixture.server, fixture.token)
            let response = try await server.request("GET", "/v1/credentials/ns/a/proxy/reflect")
            #expect(response.status == 200, "\(response.text)")
            #expect(response.headers["x-safe"] == "kept")
            #expect(response.headers["x-echo-authorization"] == nil)
            #expect(response.headers["location"] == nil)
            let encoded = token.utf8.map { String(format: "%%%02x", $0) }.joined()
            #expect(!"\(response.headers)".contains(token) && !"\(response.headers)".contains(encoded))
        }
    }

    /// A body the upstream may leave unread goes with `Connection: close`, so nothing of it waits
    /// on a kept connection to be read as the next request: a body on a GET or DELETE, and a
    /// streamed body (too large to keep for a second try), which the upstream may answer before
    /// it has all arrived. A GET without a body, or a kept POST body, keeps the connection.
    @Test func aBodyTheUpstreamMayNotReadEndsTheUpstreamConnection() async throws {
        let fixture = try await Self.fixture(configure: { $0.proxy.replayBodyBytes = 64 })
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let server = fixture.server
            func connection(_ method: String, body: String?) async throws -> String? {
                let response = try await server.request(method, "/v1/credentials/ns/a/proxy/echo", body: body)
                #expect(response.status == 200, "\(method): \(response.text)")
                return (response.json()["headers"] as? [String: String])?["connection"]
            }
            let smuggling = try await connection("GET", body: "GET /echo HTTP/1.1\r\n\r\n")
            let delete = try await connection("DELETE", body: "x")
            let plain = try await connection("GET", body: nil)
            let post = try await connection("POST", body: "{}")
            let streamed = try await connection("POST", body: String(repeating: "x", count: 65))
            #expect(smuggling == "close" && delete == "close" && streamed == "close")
            #expect(plain != "close" && post != "close")
        }
    }

    @Test func onlyTheInstancesBasesAreReachedAndRedirectsAreReturned() async throws {
        let fixture = try await Self.fixture()
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let elsewhere = try await server.request(
                "GET", "/v1/credentials/ns/a/proxy",
                headers: ["TokenVault-Upstream-URL": "http://127.0.0.2:\(upstream.port)/echo"])
            #expect(elsewhere.status == 422 && elsewhere.json()["code"] as? String == "upstream_not_allowed")
            let plain = try await server.request(
                "GET", "/v1/credentials/ns/a/proxy", headers: ["TokenVault-Upstream-URL": "http://bank.example/echo"])
            #expect(plain.status == 422 && plain.text.contains("https is required"), "\(plain.text)")
            let dotted = try await server.request("GET", "/v1/credentials/ns/a/proxy/echo/%2e%2e/admin")
            #expect(
                dotted.status == 422 && dotted.json()["code"] as? String == "upstream_not_allowed", "\(dotted.text)")
            // An instance that lists no base: nothing goes anywhere.
            _ = try await server.fixture.vault.put(
                try CredentialID("ns/b"), payload: try SamplePayloads.decode(SamplePayloads.oauth().json),
                provider: "bare")
            let bare = try await server.request("GET", "/v1/credentials/ns/b/proxy/echo")
            #expect(bare.status == 422 && bare.text.contains("lists no api_base_urls"), "\(bare.text)")

            let redirected = try await server.request(
                "GET", "/v1/credentials/ns/a/proxy/redirect?to=http://127.0.0.2:\(upstream.port)/echo")
            #expect(redirected.status == 302, "\(redirected.text)")
            #expect(redirected.headers["location"] == "http://127.0.0.2:\(upstream.port)/echo")
            #expect(upstream.received.count == 1, "only the redirect itself: \(upstream.received)")
        }
    }

    /// A 401 `invalid_token` refreshes once (the engine's forced refresh) and sends the call once
    /// more with the new token; a refresh that changes nothing returns the 401 as it came.
    @Test func aRefusedTokenIsRefreshedOnceAndTheCallReplayedOnce() async throws {
        let script = RotationScript()
        let fixture = try await Self.fixture(
            engine: { fixture in RotatingRefreshService(vault: fixture.vault, script: script) },
            accepts: { token in script.accepted.withLock { $0 } == token })
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let (server, upstream, token) = (fixture.server, fixture.upstream, fixture.token)
            let response = try await server.request(
                "GET", "/v1/credentials/ns/a/proxy/protected", headers: ["X-Keep": "1"])
            #expect(response.status == 200, "\(response.text)")
            #expect(response.headers["tokenvault-proxy"] == "upstream; refreshed")
            #expect(script.refreshes.withLock { $0 } == 1)
            let sent = upstream.authorizations
            #expect(sent.count == 2 && sent[0] == "Bearer \(token)" && sent[1] != sent[0], "\(sent)")
            #expect(!response.text.contains(script.accepted.withLock { $0 } ?? "-"))

            // The provider now refuses every token: one refresh, no replay, the 401 as it came.
            script.accepted.withLock { $0 = "nothing" }
            script.changesToken.withLock { $0 = false }
            let refused = try await server.request("GET", "/v1/credentials/ns/a/proxy/protected")
            #expect(refused.status == 401 && refused.headers["www-authenticate"]?.contains("invalid_token") == true)
            #expect(refused.headers["tokenvault-proxy"] == "upstream")
            #expect(script.refreshes.withLock { $0 } == 2)
            #expect(upstream.authorizations.count == 3)
        }
    }

    @Test func bodiesOfSeveralMebibytesStreamBothWays() async throws {
        let fixture = try await Self.fixture()
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let server = fixture.server
            let size = 4 << 20
            // A body over proxy.replay_body_bytes streams. Made off the concurrency pool (a debug
            // build takes a while over 4 MiB, and the suite's timers share the pool).
            let uploadSize = size
            let (body, checksum) = try await offThePool {
                let body = (0..<uploadSize).map { UInt8(truncatingIfNeeded: $0 &* 7) }
                return (body, TestUpstream.checksum(body))
            }
            let socketPath = server.socketPath
            let uploaded = try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                try connection.send(
                    "POST /v1/credentials/ns/a/proxy/upload HTTP/1.1\r\nHost: localhost\r\nContent-Length: \(uploadSize)\r\n\r\n"
                )
                try connection.send(body)
                return try connection.readResponse(timeout: 60)
            }
            let upload = try #require(uploaded)
            #expect(upload.status == 200, "\(upload.text)")
            #expect(upload.json()["length"] as? Int == uploadSize)
            #expect(upload.json()["checksum"] as? String == "\(checksum)")

            let download = try await server.request("GET", "/v1/credentials/ns/a/proxy/stream?bytes=\(size)")
            #expect(download.status == 200 && download.body.count == size)
        }
    }

    @Test func bodiesOverTheLimitsAreRefusedOrCutOff() async throws {
        let fixture = try await Self.fixture(
            configure: { options in
                options.proxy.maximumRequestBytes = 100_000
                options.proxy.maximumResponseBytes = 100_000
            })
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let server = fixture.server
            let big = String(repeating: "x", count: 200_000)
            let upload = try await server.request("POST", "/v1/credentials/ns/a/proxy/upload", body: big)
            #expect(upload.status == 413 && upload.json()["code"] as? String == "payload_too_large", "\(upload.text)")
            // A streamed answer longer than the limit ends early (its head was already sent).
            let download = try? await server.request("GET", "/v1/credentials/ns/a/proxy/stream?bytes=300000")
            #expect((download?.body.count ?? 0) < 300_000)
        }
    }

    @Test func eachCallerHasItsCapOfCallsInFlight() async throws {
        let fixture = try await Self.fixture(
            configure: { options in
                options.connections.maximumProxyCallsPerUID = 2
            })
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            async let first = server.request("GET", "/v1/credentials/ns/a/proxy/hold?seconds=5")
            async let second = server.request("GET", "/v1/credentials/ns/a/proxy/hold?seconds=5")
            #expect(try await waitUntil(within: 10) { upstream.received.count == 2 })
            let third = try await server.request("GET", "/v1/credentials/ns/a/proxy/echo")
            #expect(third.status == 429 && third.json()["code"] as? String == "too_many_proxy_calls", "\(third.text)")
            #expect(try await [first.status, second.status] == [200, 200])
            let after = try await server.request("GET", "/v1/credentials/ns/a/proxy/echo")
            #expect(after.status == 200)
        }
    }

    /// An upstream slower than `proxy.deadline_seconds` gets 504, one that cannot be reached 502;
    /// both are audited as failed calls.
    @Test func slowAndUnreachableUpstreamsGetTheirProblems() async throws {
        let fixture = try await Self.fixture(configure: { $0.proxy.deadlineSeconds = 1 })
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let server = fixture.server
            let slow = try await server.request("GET", "/v1/credentials/ns/a/proxy/hold?seconds=3")
            #expect(slow.status == 504 && slow.json()["code"] as? String == "upstream_timeout", "\(slow.text)")

            let closed = try Self.closedPort()
            defer { close(closed.descriptor) }
            try await fixture.addInstance("gone", base: "http://127.0.0.1:\(closed.port)")
            let gone = try await server.request("GET", "/v1/credentials/ns/gone/proxy/echo")
            #expect(gone.status == 502 && gone.json()["code"] as? String == "upstream_unavailable", "\(gone.text)")

            let audit = try await server.request("GET", "/v1/admin/audit").json()
            let failed = (audit["items"] as? [[String: Any]] ?? []).filter {
                $0["operation"] as? String == "credential.proxy" && $0["outcome"] as? String == "failed"
            }
            #expect(failed.count == 2, "\(failed)")
        }
    }

    /// A loopback port nothing listens on: bound and not listening (a connect is refused), and
    /// kept bound until the caller closes `descriptor`, so no other test's listener can take it.
    private static func closedPort() throws -> (port: Int, descriptor: Int32) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            let code = errno
            close(descriptor)
            throw SocketTestError("cannot bind: errno \(code)")
        }
        return (Int(UInt16(bigEndian: address.sin_port)), descriptor)
    }

    /// `credential:use` alone: calls go through, and no route shows the token.
    /// `proxy.deadline_seconds` bounds the whole call, an answer still streaming included: the
    /// caller sees it cut short.
    @Test func anAnswerStillStreamingAtTheDeadlineIsCutShort() async throws {
        let fixture = try await Self.fixture(configure: { $0.proxy.deadlineSeconds = 1 })
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let started = ContinuousClock.now
            do {
                let response = try await fixture.server.request("GET", "/v1/credentials/ns/a/proxy/drip?seconds=8")
                // On a loaded machine the deadline may come before the answer's head: a 504 then.
                #expect(response.status == 504, "the answer was not cut short: \(response.status)")
            } catch {
                // Cut short while streaming: the caller's read fails.
            }
            // Far from the answer's 8 s, with room for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(6))
        }
    }

    /// A caller that leaves once its request went upstream: the upstream may act on it with the
    /// token, so the call is audited and counted when its answer comes, as any other.
    @Test func aCallWhoseCallerLeftIsStillAudited() async throws {
        let fixture = try await Self.fixture()
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let (server, upstream) = (fixture.server, fixture.upstream)
            let socketPath = server.socketPath
            try await offThePool {
                let connection = try UnixSocketConnection(path: socketPath)
                try connection.send(TokenFastPathTests.get("/v1/credentials/ns/a/proxy/hold?seconds=1"))
                let sent = ContinuousClock.now
                while !upstream.received.contains("GET /hold?seconds=1"), ContinuousClock.now - sent < .seconds(10) {
                    Thread.sleep(forTimeInterval: 0.01)
                }
                // The connection closes as it goes.
                _ = connection
            }
            var details: [String] = []
            let waited = ContinuousClock.now
            while details.isEmpty, ContinuousClock.now - waited < .seconds(10) {
                try await Task.sleep(for: .milliseconds(100))
                let audit = try await server.request("GET", "/v1/admin/audit?credential=ns/a").json()
                details = (audit["items"] as? [[String: Any]] ?? []).filter {
                    $0["operation"] as? String == "credential.proxy"
                }
                .compactMap { $0["detail"] as? String }
            }
            #expect(details == ["GET \(upstream.base)/hold 2xx"], "\(details)")
        }
    }

    /// `timeout_seconds` bounds the wait for the upstream's next bytes, well inside the deadline.
    @Test func anUpstreamSilentForLongerThanTheReadTimeoutTimesOut() async throws {
        let fixture = try await Self.fixture(configure: { $0.proxy.deadlineSeconds = 60 })
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let server = fixture.server
            try await fixture.addInstance(
                "quick", base: fixture.upstream.base, options: ["timeout_seconds": .number(1)])
            let started = ContinuousClock.now
            let slow = try await server.request("GET", "/v1/credentials/ns/quick/proxy/hold?seconds=6")
            #expect(slow.status == 504 && slow.json()["code"] as? String == "upstream_timeout", "\(slow.text)")
            #expect((slow.json()["detail"] as? String ?? "").contains("a read timed out"), "\(slow.text)")
            #expect(ContinuousClock.now - started < .seconds(5))
            // An answer within the read timeout is unaffected.
            let quick = try await server.request("GET", "/v1/credentials/ns/quick/proxy/echo")
            #expect(quick.status == 200, "\(quick.text)")
        }
    }

    @Test func aCallerAllowedOnlyToUseNeverSeesTheToken() async throws {
        let me = getuid()
        let policy = AccessPolicy(
            rules: [.init(subject: .user(me), namespaces: ["ns"], permissions: [.credentialUse])],
            daemonUID: me &+ 12345, rootIsAdmin: false)
        let fixture = try await Self.fixture(policy: policy)
        try await withStopping(fixture, stop: { await $0.stop() }) { fixture in
            let (server, upstream, token) = (fixture.server, fixture.upstream, fixture.token)
            let call = try await server.request("GET", "/v1/credentials/ns/a/proxy/echo")
            #expect(call.status == 200, "\(call.text)")
            let usable = try await server.request("GET", "/v1/proxy/credentials")
            let items = usable.json()["items"] as? [[String: Any]] ?? []
            #expect(items.count == 1 && items.first?["id"] as? String == "ns/a", "\(usable.text)")
            #expect(items.first?["api_base_urls"] as? [String] == [upstream.base], "\(usable.text)")
            let elsewhere = try await server.request("GET", "/v1/proxy/credentials?namespace=other")
            #expect(elsewhere.status == 403)
            var answers = [call, usable]
            for (method, target) in [
                ("GET", "/v1/credentials/ns/a/token"), ("POST", "/v1/credentials/ns/a/refresh"),
                ("GET", "/v1/credentials/ns/a/watch"), ("GET", "/v1/events"), ("GET", "/v1/credentials/ns/a"),
                ("GET", "/v1/credentials"), ("GET", "/v1/admin/audit"),
            ] {
                let answer = try await server.request(method, target)
                #expect(answer.status == 403, "\(method) \(target): \(answer.status)")
                answers.append(answer)
            }
            let other = try await server.request("GET", "/v1/credentials/other/a/proxy/echo")
            #expect(other.status == 403)
            // An upstream that echoes the token, as sent and percent-encoded, split across the
            // pieces of its body: every copy arrives as `*`s, and the body keeps its length.
            let reflected = try await server.request("GET", "/v1/credentials/ns/a/proxy/reflect-body")
            #expect(reflected.status == 200, "\(reflected.text)")
            let fields = reflected.json()
            #expect(fields["raw"] as? String == String(repeating: "*", count: token.utf8.count), "\(reflected.text)")
            #expect(
                fields["encoded"] as? String == String(repeating: "*", count: 3 * token.utf8.count),
                "\(reflected.text)")
            #expect(fields["end"] as? Bool == true)
            answers.append(reflected)
            // A body compressed all the same would hide the token: refused.
            let compressed = try await server.request("GET", "/v1/credentials/ns/a/proxy/compressed")
            #expect(compressed.status == 502, "\(compressed.text)")
            #expect(compressed.json()["code"] as? String == "upstream_unavailable", "\(compressed.text)")
            answers.append(compressed)
            for answer in answers + [other] {
                #expect(!answer.text.contains(token) && !"\(answer.headers)".contains(token))
            }
        }
    }
}

/// What the rotating engine did and what the upstream accepts.
private final class RotationScript: Sendable {
    let refreshes = Mutex(0)
    let accepted = Mutex<String?>(nil)
    let changesToken = Mutex(true)
}

extension ProxyTests {
    /// An instance with a TLS client certificate (Sber ID's APIs use mutual TLS) presents it to
    /// an upstream that requires one, from the same options its token calls read; an instance
    /// without one is refused at the handshake (502, nothing answered).
    @Test func theInstancesClientCertificateIsPresented() async throws {
        let pki = try await TestPKI.shared()
        var serverOptions = TestOAuthServer.Options()
        serverOptions.tls = pki.serverTLS()
        let upstream = try await TestOAuthServer.start(serverOptions)
        let server = try await TestServer(
            providers: ["sber", "plain"])
        try await withStopping(
            server,
            stop: { server in
                await server.stop()
                await upstream.shutdown()
            }
        ) { server in
            let base = try APIBase(parsing: upstream.baseURL)
            var sber = ProviderSettings(
                name: "sber", kind: "sber-id",
                options: [
                    "client_certificate_file": .string(pki.clientPKCS12Path),
                    "client_certificate_password_file": .string(pki.passwordPath), "ca_file": .string(pki.caPath),
                ])
            sber.apiBases = [base]
            var plain = ProviderSettings(name: "plain", kind: "oauth2", options: ["ca_file": .string(pki.caPath)])
            plain.apiBases = [base]
            server.fixture.vault.install(ProviderTable(settings: ["sber": sber, "plain": plain]))
            for name in ["sber", "plain"] {
                _ = try await server.fixture.vault.put(
                    try CredentialID("ns/\(name)"), payload: try SamplePayloads.decode(SamplePayloads.oauth().json),
                    provider: name)
            }
            let presented = try await server.request("GET", "/v1/credentials/ns/sber/proxy/anything")
            #expect(presented.headers["tokenvault-proxy"] == "upstream", "\(presented.status) \(presented.text)")
            let refused = try await server.request("GET", "/v1/credentials/ns/plain/proxy/anything")
            #expect(
                refused.status == 502 && refused.json()["code"] as? String == "upstream_unavailable", "\(refused.text)")
        }
    }
}

/// A refresh engine whose forced refresh stores a new access token (and tells the upstream to
/// accept it), or leaves the credential as it is when `changesToken` is off.
private struct RotatingRefreshService: RefreshService {
    let vault: Vault
    let script: RotationScript

    func refresh(_ id: CredentialID, reason: RefreshReason) async throws -> RefreshOutcome {
        await .refreshed(try vault.metadata(id))
    }

    func refreshOnDemand(_ id: CredentialID, minimumTTL: Double) async throws -> RefreshOutcome {
        try await refresh(id, reason: .onDemand)
    }

    func refreshForced(_ id: CredentialID) async throws -> RefreshOutcome {
        script.refreshes.withLock { $0 += 1 }
        guard script.changesToken.withLock({ $0 }) else { return await .refreshed(try vault.metadata(id)) }
        let payload = SamplePayloads.oauth()
        script.accepted.withLock { $0 = payload.tokens[0] }
        return .refreshed(
            try await vault.put(id, payload: try SamplePayloads.decode(payload.json), provider: "oauth2"))
    }

    func remove(_ id: CredentialID, force: Bool, audit: AuditEvent?) async throws -> RemovalOutcome {
        .deleted(revoked: false)
    }

    func redeem(_ redemption: CodeRedemption) async throws -> RedeemedCode {
        throw ProviderFailure.notConfigured("oauth2")
    }

    func startSignIn(_ start: SignInStart) async throws -> StartedSignIn {
        throw ProviderFailure.notConfigured("oauth2")
    }

    func finishSignIn(_ finish: SignInFinish) async throws -> RedeemedCode {
        throw ProviderFailure.notConfigured("oauth2")
    }

    func providerStates() -> [ProviderState] { [] }
    var counters: RefreshCounters { RefreshCounters() }
}
