import Foundation
import Hummingbird
import Testing
import TokenVaultTesting

@testable import TokenVaultServer

/// The table the event loop asks whether a path is the router's 404, and the problem middleware
/// asks which methods a path has (405 with `Allow`): one matcher for both.
@Suite struct RouteTableTests {
    static func table() -> RouteTable {
        RouteTable([
            ("GET", "/v1/credentials/:namespace/:name"), ("DELETE", "/v1/credentials/:namespace/:name"),
            ("POST", "/v1/admin/rotate-key"), ("GET", "/v1/credentials/:namespace/:name/proxy/**"),
            ("PUT", "/v1/files/{name}.json"), ("GET", "/v1/static/*"),
        ])
    }

    @Test func everyKindOfSegmentMatchesWhatTheRouterWould() {
        let table = Self.table()
        for path in [
            "/v1/credentials/a/b", "/v1/admin/rotate-key", "/v1/credentials/a/b/proxy/x",
            "/v1/credentials/a/b/proxy/x/y",
            "/v1/files/report.json", "/v1/static/app.js",
        ] {
            #expect(!table.matchesNothing(path), "\(path)")
        }
        for path in [
            "/v1/credentials/a", "/v1/credentials/a/b/c", "/v1/admin/rotate", "/v1/credentials/a/b/proxy", "/v2/health",
            "/v1/static/a/b",
        ] {
            #expect(table.matchesNothing(path), "\(path)")
        }
    }

    @Test func methodsAreThoseOfEveryMatchingTemplate() {
        let table = Self.table()
        #expect(table.methods(for: "/v1/credentials/a/b") == ["DELETE", "GET"])
        #expect(table.methods(for: "/v1/admin/rotate-key") == ["POST"])
        #expect(table.methods(for: "/v1/credentials/a/b/proxy/x/y") == ["GET"])
        #expect(table.methods(for: "/v1/no-such-route").isEmpty)
    }

    /// The routes are defined once: the router registers exactly `Route`'s methods and
    /// templates, and the table the event loop and the 405s read is the same list.
    @Test func theRouterAndTheTableServeTheRoutesDefinedOnce() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            let router = Router(context: VaultRequestContext.self)
            server.api.register(on: router)
            let registered = Set(router.routes.map { "\($0.method.rawValue) \($0.path)" })
            let defined = Set(Route.registered.map { "\($0.method) \($0.path)" })
            #expect(registered == defined, "\(registered.symmetricDifference(defined))")
            #expect(Set(RouteTable().templates) == Set(Route.allCases.map(\.template)))
            // No route is the 404 of a path written as its own template.
            for route in Route.allCases where !route.template.contains("**") {
                #expect(!RouteTable().matchesNothing(route.template), "\(route)")
            }
        }
    }

    /// Each method of each route reaches a handler of its own over the socket: never the
    /// router's 404 or 405, whatever the handler then says of the request (a credential that
    /// does not exist, a body missing). `GET /v1/events` is left out: its answer never ends.
    @Test func everyDefinedRouteIsAnsweredByAHandler() async throws {
        let server = try await TestServer()
        try await withStopping(server, stop: { await $0.stop() }) { server in
            for (method, template) in Route.registered where template != Route.events.template {
                let path = template.replacingOccurrences(of: "{namespace}", with: "ns")
                    .replacingOccurrences(of: "{name}", with: "missing").replacingOccurrences(of: "**", with: "x")
                let response = try await server.request(method, path, body: method == "GET" ? nil : "{}")
                let code = response.json()["code"] as? String
                #expect(code != "not_found" && response.status != 405, "\(method) \(path): \(response.text)")
            }
        }
    }
}
