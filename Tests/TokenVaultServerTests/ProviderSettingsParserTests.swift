import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultServer
import TokenVaultTesting

/// The `providers` section: instances with their refresh and limit settings, the old list form,
/// and errors that name the key.
@Suite struct ProviderSettingsParserTests {
    let directory = TemporaryDirectory()

    func load(_ providers: String) throws -> DaemonConfiguration {
        let path = directory.file("config.json")
        writeFile(path, Data("{\"providers\": \(providers)}".utf8))
        return try DaemonConfiguration.load(path: path, catalog: ProviderKinds())
    }

    func error(_ providers: String) -> String {
        do {
            _ = try load(providers)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func anInstanceWithEveryEngineSetting() throws {
        let config = try load(
            """
            {"acme": {"kind": "oauth2", "token_endpoint": "https://id.example/token", "client_id": "v",
                      "refresh": {"lifetime_share": 0.5, "margin_seconds": 30, "jitter": 0, "default_lifetime_seconds": 600},
                      "limits": {"concurrency": 2, "rate_per_second": 1.5, "burst": 3, "breaker_failures": 4,
                                 "breaker_cooldown_seconds": 10, "misconfigured_probe_seconds": 60,
                                 "retry_base_seconds": 2, "retry_cap_seconds": 20},
                      "expired_unit": "unix_milliseconds"},
             "tinkoff-id": {}}
            """)
        let acme = try #require(config.providers["acme"])
        #expect(acme.kind == "oauth2")
        #expect(acme.planner == RefreshPlanner(lifetimeShare: 0.5, margin: 30, jitterFraction: 0, defaultLifetime: 600))
        #expect(acme.limits.concurrency == 2 && acme.limits.ratePerSecond == 1.5 && acme.limits.burst == 3)
        #expect(acme.limits.breakerThreshold == 4 && acme.limits.breakerCooldown == 10)
        #expect(acme.limits.misconfiguredProbeInterval == 60 && acme.limits.retry == RetryPolicy(base: 2, cap: 20))
        #expect(acme.expiredUnit == .unixMilliseconds)
        // Only the kind's own options are passed on to the provider.
        #expect(Set(acme.options.keys) == ["token_endpoint", "client_id"])
        #expect(config.providers["tinkoff-id"]?.kind == "tinkoff-id")
        #expect(config.providerNames == ["acme", "tinkoff-id"])
    }

    /// `proxy_headers`: more request headers the proxy forwards for the instance, lower-cased;
    /// a name that is never forwarded, or that is not a header name, is refused with its key.
    @Test func proxyHeadersAreReadAndChecked() throws {
        let config = try load(#"{"bank": {"kind": "oauth2", "proxy_headers": ["X-Api-Version", "notion-version"]}}"#)
        #expect(config.providers["bank"]?.proxyHeaders == ["x-api-version", "notion-version"])
        #expect(config.providers["bank"]?.options.isEmpty == true, "not one of the kind's options")
        for (name, why) in [
            ("Authorization", "the caller's own credentials"), ("Cookie", "the caller's own credentials"),
            ("Host", "frames the message"), ("Proxy-Authorization", "frames the message"),
            ("TokenVault-Upstream-URL", "the vault's own"), ("X-Forwarded-Host", "path, method or origin"),
            ("X-Original-URI", "path, method or origin"), ("X-Envoy-Original-Path", "path, method or origin"),
        ] {
            let message = error(#"{"bank": {"kind": "oauth2", "proxy_headers": ["\#(name)"]}}"#)
            #expect(message.contains("providers.bank.proxy_headers[0]") && message.contains(why), "\(message)")
        }
        #expect(error(#"{"bank": {"kind": "oauth2", "proxy_headers": ["X Bad"]}}"#).contains("expected a header name"))
        #expect(error(#"{"bank": {"kind": "oauth2", "proxy_headers": "X-A"}}"#).contains("a list of header names"))
    }

    /// `api_base_urls`: where the proxy may send the instance's tokens, each entry checked.
    @Test func apiBaseURLsAreReadAndChecked() throws {
        let config = try load(
            #"{"bank": {"kind": "oauth2", "api_base_urls": ["https://api.bank.example/v1/", "http://127.0.0.1:8080"]}}"#
        )
        let bases = try #require(config.providers["bank"]).apiBases
        #expect(bases.map(\.description) == ["https://api.bank.example/v1", "http://127.0.0.1:8080"])
        #expect(config.providers["bank"]?.options.isEmpty == true, "not one of the kind's options")
        #expect(
            error(#"{"bank": {"kind": "oauth2", "api_base_urls": ["http://api.bank.example"]}}"#).contains(
                "api_base_urls[0]: "))
        #expect(
            error(#"{"bank": {"kind": "oauth2", "api_base_urls": ["https://a.example", 3]}}"#).contains(
                "api_base_urls[1]: expected a base URL"))
        // An entry may name the audience calls under it are made for (a derived token).
        let audienced = try load(
            #"{"bank": {"kind": "oauth2", "api_base_urls": [{"url": "https://api.bank.example/v1", "audience": "payments"}]}}"#
        )
        #expect(audienced.providers["bank"]?.apiBases.first?.audience == "payments")
        #expect(
            error(#"{"bank": {"kind": "oauth2", "api_base_urls": [{"url": "https://a.example", "aud": "x"}]}}"#)
                .contains(
                    "api_base_urls[0]: expected a base URL, or an object with url and audience"))
        #expect(
            error(#"{"bank": {"kind": "oauth2", "api_base_urls": [{"url": "https://a.example", "audience": ""}]}}"#)
                .contains("api_base_urls[0].audience"))
        #expect(
            error(#"{"bank": {"kind": "oauth2", "api_base_urls": "https://a.example"}}"#).contains("expected a list"))
        #expect(
            error(#"{"bank": {"kind": "oauth2", "api_base_urls": ["https://a.example/x?q=1"]}}"#).contains("no ?query"))
    }

    /// `dpop`: a flag of the instance, not a kind option; a change of it rebuilds the instance.
    @Test func dpopIsAFlagOfTheInstance() throws {
        let config = try load(#"{"bank": {"kind": "oauth2", "dpop": true}}"#)
        let bank = try #require(config.providers["bank"])
        #expect(bank.dpop && bank.options.isEmpty)
        #expect(try load(#"{"bank": {"kind": "oauth2"}}"#).providers["bank"]?.dpop == false)
        #expect(
            error(#"{"bank": {"kind": "oauth2", "dpop": "yes"}}"#).contains(
                "providers.bank.dpop: expected true or false"))
        var plain = bank
        plain.dpop = false
        #expect(plain.change(to: bank) == .rebuilt)
    }

    @Test func theListFormDeclaresNameOnlyInstances() throws {
        let config = try load(#"["tinkoff-id", "corp"]"#)
        #expect(config.providers["tinkoff-id"]?.kind == "tinkoff-id")
        #expect(config.providers["corp"]?.kind == "oauth2" && config.providers["corp"]?.options.isEmpty == true)
    }

    @Test(arguments: [
        (#"{"acme": {"token_endpoint": "x"}}"#, "providers.acme.kind: is required"),
        (#"{"acme": {"kind": "saml"}}"#, "providers.acme.kind: 'saml' is not one of"),
        (
            #"{"acme": {"kind": "oauth2", "refresh": {"lifetime_share": 2}}}"#,
            "providers.acme.refresh.lifetime_share: must be between"
        ),
        (
            #"{"acme": {"kind": "oauth2", "refresh": {"margin": 5}}}"#,
            "providers.acme.refresh.margin: is not a known setting"
        ),
        (
            #"{"acme": {"kind": "oauth2", "limits": {"burst": "ten"}}}"#,
            "providers.acme.limits.burst: expected a number"
        ),
        (#"{"acme": {"kind": "oauth2", "expired_unit": "hours"}}"#, "providers.acme.expired_unit: must be one of"),
        (#"{"Bad Name": {"kind": "oauth2"}}"#, "providers.Bad Name: 'Bad Name' is not a provider name"),
        (#"42"#, "providers: expected an object"),
    ])
    func errorsNameTheKey(_ providers: String, _ expected: String) {
        let message = error(providers)
        #expect(message.contains(expected), "\(message)")
        #expect(message.contains("config.json"), "the file is named: \(message)")
    }
}
