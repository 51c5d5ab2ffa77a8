import Testing

@testable import TokenVaultServer

/// The table the event loop asks whether a path is the router's 404, and the problem middleware
/// asks which methods a path has (405 with `Allow`): one matcher for both.
@Suite struct RouteTableTests {
    static func table() -> RouteTable {
        let table = RouteTable()
        table.set([
            ("GET", "/v1/credentials/:namespace/:name"), ("DELETE", "/v1/credentials/:namespace/:name"),
            ("POST", "/v1/admin/rotate-key"), ("GET", "/v1/credentials/:namespace/:name/proxy/**"),
            ("PUT", "/v1/files/{name}.json"), ("GET", "/v1/static/*"),
        ])
        return table
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

    @Test func nothingIsUnmatchedBeforeTheRoutesAreSet() {
        #expect(!RouteTable().matchesNothing("/v1/no-such-route"))
        #expect(Self.table().templates.contains("/v1/credentials/:namespace/:name/proxy/**"))
    }
}
