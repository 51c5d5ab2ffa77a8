import Foundation
import NIOCore
import Testing
import TokenVaultCore
import TokenVaultTesting

@testable import TokenVaultServer

/// Pages of the listing: their parameters read from bytes by the router's rule, kept while
/// nothing on them changed (`RenderedPages`), and answered on the event loop once kept.
@Suite struct ListingPagesTests {
    static func parameters(_ target: String) -> ListingParameters? {
        var target = target
        return target.withUTF8 { ListingParameters(target: UnsafeRawBufferPointer($0)) }
    }

    @Test func plainParametersAreReadFromTheBytes() throws {
        let all = try #require(Self.parameters("/v1/credentials"))
        #expect(all.query == CredentialQuery())
        let page = try #require(Self.parameters("/v1/credentials?namespace=pay&status=active&limit=50&cursor=pay/c9"))
        #expect(page.query.namespace == "pay" && page.query.status == .active && page.query.limit == 50)
        #expect(page.query.after == (try CredentialID("pay/c9")))
        #expect(Self.parameters("/v1/credentials?limit=50")?.query.limit == 50)
    }

    /// Anything the router might read otherwise, or answers with a 400, is left to it.
    @Test func anythingElseIsTheRouters() {
        for target in [
            "/v1/credentials/", "/v1/credentialsx", "/v1/credentials?", "/v1/credentials?limit",
            "/v1/credentials?limit=5&limit=6", "/v1/credentials?namespace=p%61y", "/v1/credentials?namespace=a+b",
            "/v1/credentials?namespace=pay#x", "/v1/credentials?other=1", "/v1/credentials?limit=0",
            "/v1/credentials?limit=501", "/v1/credentials?status=asleep", "/v1/credentials?cursor=nope",
            "/v1/credentials?namespace=", "/v1/credentials?limit=5&",
        ] {
            #expect(Self.parameters(target) == nil, "\(target)")
        }
    }

    @Test func aCallerIsScopedToWhatItMayList() throws {
        let listing = try #require(Self.parameters("/v1/credentials?namespace=pay"))
        #expect(listing.scoped(to: ["other"]) == .denied(namespace: "pay"))
        #expect(try #require(Self.parameters("/v1/credentials")).scoped(to: []) == .denied(namespace: nil))
        guard case .query(let query) = listing.scoped(to: ["pay", "other"]) else {
            Issue.record("refused")
            return
        }
        #expect(query.namespace == "pay" && query.namespaces == ["pay", "other"])
        guard case .query(let everything) = listing.scoped(to: nil) else {
            Issue.record("a caller who may list everything was refused")
            return
        }
        #expect(everything.namespaces == nil)
    }

    @Test func aPageIsServedUntilAChangeAndNeverPastTheBound() async throws {
        let fixture = try TestVault()
        let pages = RenderedPages(vault: fixture.vault)
        let query = CredentialQuery(namespace: "pay", limit: 50)
        let body = ByteBuffer(string: "{\"items\":[]}")
        let mark = try #require(fixture.vault.listingMark())
        pages.keep(body, for: query, mark: mark)
        #expect(pages.page(for: query) == body)
        #expect(pages.page(for: CredentialQuery(namespace: "pay", namespaces: ["pay"], limit: 50)) == nil)
        _ = try await fixture.vault.put(
            try CredentialID("elsewhere/a"), payload: SamplePayloads.decode(SamplePayloads.oauth().json),
            provider: "oauth2")
        #expect(pages.page(for: query) == nil, "any change, in any namespace")
        let now = try #require(fixture.vault.listingMark())
        #expect(now != mark)
        pages.keep(body, for: CredentialQuery(namespace: "late"), mark: mark)
        #expect(pages.size.pages == 1, "a page read before the change is not kept")
        // Past the bound, pages behind a change go first.
        for limit in 1...130 { pages.keep(body, for: CredentialQuery(namespace: "old", limit: limit), mark: now) }
        _ = try await fixture.vault.put(
            try CredentialID("elsewhere/b"), payload: SamplePayloads.decode(SamplePayloads.oauth().json),
            provider: "oauth2")
        let newer = try #require(fixture.vault.listingMark())
        for limit in 1...127 { pages.keep(body, for: CredentialQuery(namespace: "new", limit: limit), mark: newer) }
        #expect(pages.size.pages == 127)
        #expect(pages.page(for: CredentialQuery(namespace: "new", limit: 1)) == body)
        for limit in 1...(RenderedPages.pageLimit + 10) {
            pages.keep(body, for: CredentialQuery(limit: limit), mark: newer)
            #expect(pages.size.pages <= RenderedPages.pageLimit)
        }
        let large = ByteBuffer(repeating: UInt8(ascii: " "), count: RenderedPages.pageByteLimit)
        for limit in 1...20 {
            pages.keep(large, for: CredentialQuery(namespace: "big", limit: limit), mark: newer)
            #expect(pages.size.bytes <= RenderedPages.byteLimit)
            #expect(pages.page(for: CredentialQuery(namespace: "big", limit: limit)) == large)
        }
        pages.keep(
            ByteBuffer(repeating: UInt8(ascii: " "), count: RenderedPages.pageByteLimit + 1),
            for: CredentialQuery(limit: 500), mark: newer)
        #expect(pages.page(for: CredentialQuery(limit: 500)) == nil, "a page over its bound")
    }

    static func answered(_ server: TestServer) async throws -> Double {
        try await FastRouteTests.answered(server, "/v1/credentials")
    }

    @Test func aKeptPageIsAnsweredOnTheLoopAndAChangeIsListedAtOnce() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let body = server.putBody(provider: "oauth2", token: SamplePayloads.oauth().json)
            #expect(try await server.request("PUT", "/v1/credentials/pay/alice", body: body).status == 201)
            let (routed, fast) = try await FastRouteTests.bothWays(server, "/v1/credentials?limit=50")
            #expect(routed.status == 200 && fast.status == 200 && fast.body == routed.body)
            FastRouteTests.expectSameHead(routed, fast)
            #expect(fast.text.contains("pay/alice"))
            #expect(try await Self.answered(server) == 1)
            #expect(try await server.request("PUT", "/v1/credentials/pay/bob", body: body).status == 201)
            let (first, second) = try await FastRouteTests.bothWays(server, "/v1/credentials?limit=50")
            #expect(first.text.contains("pay/bob") && second.body == first.body)
            #expect(try await Self.answered(server) == 2)
            _ = try await server.request("DELETE", "/v1/credentials/pay/alice")
            let after = try await server.request("GET", "/v1/credentials?limit=50")
            #expect(!after.text.contains("pay/alice") && after.text.contains("pay/bob"))
        }
    }

    @Test func aCallerGetsAPageOfItsOwnNamespacesOnly() async throws {
        let policy = AccessPolicy(
            rules: [.init(subject: .user(getuid()), namespaces: ["allowed"], permissions: [.credentialList])],
            daemonUID: getuid() &+ 12345, rootIsAdmin: false)
        let server = try await TestServer(policy: policy)
        try await withStopping(server, stop: { await $0.stop() }) { server in
            for id in ["other/a", "allowed/b"] {
                _ = try await server.fixture.vault.put(
                    try CredentialID(id), payload: SamplePayloads.decode(SamplePayloads.oauth().json),
                    provider: "oauth2")
            }
            // Kept by the router for everything: what this caller may not list.
            let everything = CredentialQuery(limit: 50)
            let mark = try #require(server.fixture.vault.listingMark())
            server.api.pages.keep(ByteBuffer(string: "other/a"), for: everything, mark: mark)
            let (routed, fast) = try await FastRouteTests.bothWays(server, "/v1/credentials?limit=50")
            #expect(routed.status == 200 && fast.body == routed.body)
            #expect(fast.text.contains("allowed/b") && !fast.text.contains("other/a"))
            #expect(try await Self.answered(server) == 1, "its own page, kept by the router, from the loop")
            let refused = try await FastRouteTests.bothWays(server, "/v1/credentials?namespace=other")
            #expect(refused.routed.status == 403 && refused.fast.status == 403)
            await server.audit.flush()
            let denials = try await server.fixture.database.auditEvents(after: nil, credentialID: nil, limit: 100)
                .filter {
                    $0.event.operation == "credential.list" && $0.event.outcome == .denied
                }
            #expect(denials.count == 2, "each refusal audited, by the router")
        }
    }

    /// The same target asked of the router (a `Connection` header sends it there) and then as
    /// the loop may answer it: the same status and body, whatever the parameters.
    @Test func theLoopAndTheRouterAnswerEveryTargetAlike() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let body = server.putBody(provider: "oauth2", token: SamplePayloads.oauth().json)
            for id in ["pay/a", "pay/b", "pay/c", "ops/d"] {
                #expect(try await server.request("PUT", "/v1/credentials/\(id)", body: body).status == 201)
            }
            for target in [
                "/v1/credentials", "/v1/credentials?limit=2", "/v1/credentials?limit=02",
                "/v1/credentials?namespace=pay&limit=2&cursor=pay/a", "/v1/credentials?status=active",
                "/v1/credentials?cursor=pay/c", "/v1/credentials?namespace=nobody", "/v1/credentials?limit=0",
                "/v1/credentials?limit=x", "/v1/credentials?status=asleep", "/v1/credentials?cursor=bad",
                "/v1/credentials?namespace=", "/v1/credentials?namespace=p%61y", "/v1/credentials?other=1",
                "/v1/credentials?limit=1&limit=2", "/v1/credentials?namespace=pay;limit=1",
            ] {
                let (routed, fast) = try await FastRouteTests.bothWays(server, target)
                #expect(routed.status == fast.status, "\(target)")
                if routed.status == 200 { #expect(routed.body == fast.body, "\(target)") }
                if routed.status == 400 {
                    #expect(routed.json()["detail"] as? String == fast.json()["detail"] as? String)
                }
            }
            // The seven 200s, each answered on the loop the second time.
            #expect(try await Self.answered(server) == 7)
        }
    }

    /// Pages listed without pause on one connection while another stores credentials: a page
    /// asked for after a store returned always has it. A page read while a store was under way,
    /// kept after it, would be served without it (`RecordCache.changeCount`).
    @Test func aPageNeverMissesAStoreThatReturnedWhileOthersAreListing() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let target = "/v1/credentials?namespace=race&limit=500"
            let listing = Task {
                var pages = 0
                while !Task.isCancelled {
                    _ = try await TokenFastPathTests.keepAlive(
                        server, Array(repeating: TokenFastPathTests.get(target), count: 10))
                    pages += 10
                }
                return pages
            }
            let body = server.putBody(provider: "oauth2", token: SamplePayloads.oauth().json)
            for index in 0..<80 {
                #expect(try await server.request("PUT", "/v1/credentials/race/c\(index)", body: body).status == 201)
                let pages = try await TokenFastPathTests.keepAlive(
                    server, Array(repeating: TokenFastPathTests.get(target), count: 2))
                for page in pages {
                    let listed = (page.json()["items"] as? [[String: Any]])?.count
                    #expect(listed == index + 1, "after c\(index): \(listed ?? -1)")
                }
            }
            listing.cancel()
            #expect(try await listing.value > 0, "listed alongside")
            #expect(try await Self.answered(server) > 0)
        }
    }
}
