import Testing
import TokenVaultCore

/// The proxy's reading of URLs and bases: one strict parse, prefixes matched by whole segments,
/// nothing a server could read as leaving the prefix.
@Suite struct UpstreamURLTests {
    @Test func aURLIsReadIntoItsParts() throws {
        let url = try UpstreamURL(parsing: "HTTPS://API.Bank.example:8443/v1/accounts?limit=5")
        #expect(url.scheme == "https" && url.host == "api.bank.example" && url.port == 8443)
        #expect(url.path == "/v1/accounts" && url.query == "limit=5")
        #expect(url.description == "https://api.bank.example:8443/v1/accounts?limit=5")
        #expect(try UpstreamURL(parsing: "https://a.example").path == "/")
        #expect(try UpstreamURL(parsing: "https://a.example:443/x").origin == "https://a.example")
        #expect(try UpstreamURL(parsing: "http://[::1]:9000/x").host == "[::1]")
        for loopback in ["http://127.0.0.1/x", "http://127.255.3.4:80/x", "http://[0:0:0:0:0:0:0:1]/x"] {
            #expect(throws: Never.self) { try UpstreamURL(parsing: loopback) }
        }
        // Escapes other than the refused ones pass as written.
        #expect(try UpstreamURL(parsing: "https://a.example/a%41b/%2C?q=%7B%22a%22%7D").path == "/a%41b/%2C")
        #expect(try UpstreamURL(parsing: "https://a.example/a..b/.x/x...").path == "/a..b/.x/x...")
        // A trailing `/` is an empty last segment, which APIs use; UTF-8 as RFC 3629 writes it passes.
        #expect(try UpstreamURL(parsing: "https://a.example/v1/users/").path == "/v1/users/")
        // Parameters on a named segment, or alone on the last one, as Java servers write a session.
        #expect(try UpstreamURL(parsing: "https://a.example/v1/a;v=2/b").path == "/v1/a;v=2/b")
        #expect(try UpstreamURL(parsing: "https://a.example/v1/;jsessionid=1").path == "/v1/;jsessionid=1")
        #expect(try UpstreamURL(parsing: "https://a.example/%D0%B8%D0%BC%D1%8F").path == "/%D0%B8%D0%BC%D1%8F")
    }

    @Test(arguments: [
        ("http://bank.example/x", "https is required"),
        // A name for loopback may resolve to ::1 first, where any local user may listen.
        ("http://localhost:8099/x", "not 'localhost'"),
        ("ftp://bank.example/x", "expected https"),
        ("https://user:pw@bank.example/x", "user information"),
        ("https://bank.example/x#frag", "fragment"),
        ("https://bank.example/a/../b", "segment of dots"),
        ("https://bank.example/a/./b", "segment of dots"),
        ("https://bank.example/a/.../b", "segment of dots"),
        ("https://bank.example/a/..../b", "segment of dots"),
        ("https://bank.example/a/...;x", "segment of dots"),
        // An empty segment: `//evil.example/x` reads as a host to a framework resolving it.
        ("https://bank.example//evil.example/x", "empty segment"),
        ("https://bank.example/v1//x", "empty segment"),
        // A segment of parameters only: `/;/evil.example` is `//evil.example` once they are dropped.
        ("https://bank.example/;/evil.example/x", "empty segment"),
        ("https://bank.example/v1/;jsessionid=1/x", "empty segment"),
        // Escaped delimiters, which one server decodes and another does not.
        ("https://bank.example/a%3Bb", "encoded"),
        ("https://bank.example/a%3bjsessionid=1", "encoded"),
        ("https://bank.example/a%3Fb=c", "encoded"),
        ("https://bank.example/a%23b", "encoded"),
        // Overlong UTF-8: `%C0%AE` is a `.` to a lenient decoder, `%C0%AF` a `/`.
        ("https://bank.example/a/%C0%AE%C0%AE/b", "not UTF-8"),
        ("https://bank.example/a%C0%AFb", "not UTF-8"),
        ("https://bank.example/a%E0%80%AEb", "not UTF-8"),
        ("https://bank.example/a%FFb", "not UTF-8"),
        ("https://bank.example/a/%2E%2E/b", "encoded"),
        ("https://bank.example/a%2fb", "encoded"),
        ("https://bank.example/a\\b", "backslash"),
        ("https://bank.example/a/..", "segment of dots"),
        ("https://bank.example/a/..;x/b", "segment of dots"),
        ("https://bank.example/a%5Cb", "encoded"),
        ("https://bank.example/a%252e", "encoded"),
        ("https://bank.example/a%00", "encoded"),
        ("https://bank.example/a%U002e", "encoded"),
        // Loopback written any other way is not loopback.
        ("http://127.0.0.256/x", "https is required"),
        ("http://127.1/x", "https is required"),
        ("http://0127.0.0.1/x", "https is required"),
        ("http://127.0.0./x", "https is required"),
        ("http://128.0.0.1/x", "https is required"),
        // What the HTTP client's URL parser would encode or refuse, so two paths would differ.
        ("https://bank.example/search?q={\"a\":1}", "must percent-encode"),
        ("https://bank.example/a|b", "must percent-encode"),
        ("https://bank.example/a?b=c\\d", "must percent-encode"),
        ("https://bank.example/a%2", "two hex digits"),
        ("https://bank.example/a%zz", "two hex digits"),
        ("https://bank.example/a?b=%", "two hex digits"),
        ("https://bank.example/a b", "spaces"),
        ("https://bank.example:0/x", "invalid port"),
        ("https://bank_example/x", "invalid host"),
        ("/relative", "not an absolute URL"),
    ])
    func whatIsRefused(_ text: String, _ why: String) {
        #expect(throws: UpstreamURLProblem.self) { try UpstreamURL(parsing: text) }
        do {
            _ = try UpstreamURL(parsing: text)
        } catch {
            #expect(error.problem.contains(why), "\(text): \(error.problem)")
        }
    }

    @Test func aBaseHoldsItsPrefixByWholeSegments() throws {
        let base = try APIBase(parsing: "https://api.bank.example/v1/")
        #expect(base.contains(try UpstreamURL(parsing: "https://api.bank.example/v1")))
        #expect(base.contains(try UpstreamURL(parsing: "https://api.bank.example/v1/accounts?x=1")))
        #expect(!base.contains(try UpstreamURL(parsing: "https://api.bank.example/v10/accounts")))
        #expect(!base.contains(try UpstreamURL(parsing: "https://api.bank.example/")))
        #expect(!base.contains(try UpstreamURL(parsing: "https://api.bank.example:8443/v1/x")))
        #expect(!base.contains(try UpstreamURL(parsing: "https://evil.example/v1/x")))
        #expect(!base.contains(try UpstreamURL(parsing: "https://api.bank.example.evil.example/v1/x")))
        #expect(try base.resolve("accounts?x=1").description == "https://api.bank.example/v1/accounts?x=1")
        #expect(try base.resolve("/accounts").description == "https://api.bank.example/v1/accounts")
        #expect(throws: UpstreamURLProblem.self) { try base.resolve("/../admin") }
        let root = try APIBase(parsing: "http://127.0.0.1:8080")
        #expect(root.contains(try UpstreamURL(parsing: "http://127.0.0.1:8080/anything")))
        #expect([base, root].base(holding: try UpstreamURL(parsing: "http://127.0.0.1:8080/x")) == root)
    }
}
