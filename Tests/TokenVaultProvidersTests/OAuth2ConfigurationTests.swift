import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// Configuration of an `oauth2` provider: every refusal names its key and says why.
@Suite struct OAuth2ConfigurationTests {
    let endpoint: JSONValue = .string("https://id.example.com/token")

    func error(_ options: [String: JSONValue], environment: [String: String] = [:]) async -> ProviderConfigurationError?
    {
        await ProviderTestSupport.configurationError(options, environment: environment)
    }

    @Test func minimalPublicClient() throws {
        let settings = ProviderTestSupport.settings(["token_endpoint": endpoint, "client_id": "app"])
        let configuration = try #require(try OAuth2Configuration.parse(settings, environment: [:]))
        #expect(
            configuration.endpoints
                == .fixed(
                    token: "https://id.example.com/token", revocation: nil, authorization: nil, pushedAuthorization: nil
                ))
        #expect(configuration.clientAuthentication == .none)
        #expect(configuration.timeouts == CallTimeouts(connectSeconds: 5, readSeconds: 60))
        #expect(configuration.sendScope == false)
        #expect(configuration.headers.isEmpty)
        #expect(!configuration.hasClientSecret)
        #expect(configuration.maximumConnections == ProviderLimits().concurrency)
        #expect(configuration.httpSettings.keepAliveSeconds == TransportSettings.defaultKeepAliveSeconds)

        var limited = settings
        limited.limits.concurrency = 3
        #expect(try OAuth2Configuration.parse(limited, environment: [:])?.maximumConnections == 3)
    }

    @Test func noOptionsIsANameOnlyProvider() throws {
        #expect(try OAuth2Configuration.parse(ProviderTestSupport.settings([:]), environment: [:]) == nil)
    }

    @Test func missingClientID() async {
        let failure = await error(["token_endpoint": endpoint])
        #expect(failure?.key == "providers.acme.client_id")
        #expect(await error(["token_endpoint": endpoint, "client_id": ""])?.key == "providers.acme.client_id")
    }

    @Test func optionsWithoutAnEndpoint() async {
        let failure = await error(["client_id": "app"])
        #expect(failure?.key == "providers.acme.token_endpoint")
        #expect(failure?.problem.contains("discovery_url") == true && failure?.problem.contains("issuer") == true)
    }

    /// `issuer` alone: every endpoint comes from the server's metadata, so none may be given.
    @Test func anIssuerAloneTakesItsEndpointsFromItsMetadata() async throws {
        let settings = ProviderTestSupport.settings(["issuer": "https://id.example.com/tenant", "client_id": "app"])
        let configuration = try #require(try OAuth2Configuration.parse(settings, environment: [:]))
        #expect(configuration.endpoints == .issuer("https://id.example.com/tenant"))
        let failure = await error([
            "issuer": "https://id.example.com", "revocation_endpoint": "https://id.example.com/revoke",
            "client_id": "app",
        ])
        #expect(failure?.key == "providers.acme.revocation_endpoint")
        #expect(failure?.problem.contains("metadata") == true)
        #expect(
            await error(["issuer": "https://id.example.com/?tenant=1", "client_id": "app"])?.key
                == "providers.acme.issuer")
    }

    @Test(arguments: [
        "http://id.example.com/token", "http://10.0.0.1/token", "http://128.0.0.1/token",
        "http://localhost.example/token",
        // A name, even this one: resolved, it may give ::1 first, where any local user may listen.
        "http://localhost:9/token", "http://LOCALHOST/token",
    ])
    func plainHTTPOffThisMachineIsRefused(url: String) async {
        let failure = await error(["token_endpoint": .string(url), "client_id": "app"])
        #expect(failure?.key == "providers.acme.token_endpoint")
        #expect(failure?.problem.contains("https is required") == true)
    }

    @Test(arguments: [
        "http://127.0.0.1:8080/token", "http://127.1.2.3/token", "http://[::1]:8080/token",
        "https://id.example.com/token",
    ])
    func httpsOrLoopbackIsAccepted(url: String) async {
        #expect(await error(["token_endpoint": .string(url), "client_id": "app"]) == nil)
    }

    @Test(arguments: ["not a url", "ftp://id.example.com/token", "https://user:pw@id.example.com/token", "/token", ""])
    func badURLs(url: String) async {
        let failure = await error(["token_endpoint": .string(url), "client_id": "app"])
        #expect(failure?.key == "providers.acme.token_endpoint")
        #expect(failure?.problem.contains("pw") != true)
    }

    @Test func endpointMustBeAString() async {
        #expect(await error(["token_endpoint": 42, "client_id": "app"])?.key == "providers.acme.token_endpoint")
    }

    @Test func revocationAndDiscoveryURLsFollowTheSameRule() async {
        let revocation = await error([
            "token_endpoint": endpoint, "revocation_endpoint": "http://id.example.com/revoke", "client_id": "app",
        ])
        #expect(revocation?.key == "providers.acme.revocation_endpoint")
        let discovery = await error([
            "discovery_url": "http://id.example.com/.well-known/openid-configuration", "client_id": "app",
        ])
        #expect(discovery?.key == "providers.acme.discovery_url")
    }

    @Test func tokenEndpointAndDiscoveryAreExclusive() async {
        let failure = await error([
            "token_endpoint": endpoint, "discovery_url": "https://id.example.com/.well-known/openid-configuration",
            "client_id": "app",
        ])
        #expect(failure?.key == "providers.acme.discovery_url")
    }

    @Test func clientSecretInTheConfigTextIsRefused() async {
        let failure = await error(["token_endpoint": endpoint, "client_id": "app", "client_secret": "s3cr3t-value"])
        #expect(failure?.key == "providers.acme.client_secret")
        #expect(failure?.problem.contains("client_secret_file") == true)
        #expect(failure?.problem.contains("client_secret_credential") == true)
        #expect(failure?.description.contains("s3cr3t-value") == false)
    }

    @Test func secretFileReadableByOthersIsRefused() async {
        let directory = TemporaryDirectory()
        let path = directory.file("client.secret")
        ProviderTestSupport.write("s3cr3t-value\n", to: path, mode: 0o644)
        let failure = await error(["token_endpoint": endpoint, "client_id": "app", "client_secret_file": .string(path)])
        #expect(failure?.key == "providers.acme.client_secret_file")
        #expect(failure?.problem.contains("chmod 600") == true)
        #expect(failure?.description.contains("s3cr3t-value") == false)

        ProviderTestSupport.write("s3cr3t-value\n", to: directory.file("group.secret"), mode: 0o640)
        let group = await error([
            "token_endpoint": endpoint, "client_id": "app",
            "client_secret_file": .string(directory.file("group.secret")),
        ])
        #expect(group?.key == "providers.acme.client_secret_file")
    }

    @Test func privateSecretFileDefaultsToBasic() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("client.secret")
        ProviderTestSupport.write("s3cr3t-value\n", to: path, mode: 0o600)
        let settings = ProviderTestSupport.settings([
            "token_endpoint": endpoint, "client_id": "app", "client_secret_file": .string(path),
        ])
        let configuration = try #require(try OAuth2Configuration.parse(settings, environment: [:]))
        #expect(configuration.hasClientSecret)
        #expect(configuration.clientAuthentication == .clientSecretBasic)
    }

    @Test func missingOrEmptySecretFile() async {
        let directory = TemporaryDirectory()
        #expect(
            await error([
                "token_endpoint": endpoint, "client_id": "app", "client_secret_file": .string(directory.file("nope")),
            ])?.key == "providers.acme.client_secret_file")
        ProviderTestSupport.write("\n", to: directory.file("empty"), mode: 0o600)
        let empty = await error([
            "token_endpoint": endpoint, "client_id": "app", "client_secret_file": .string(directory.file("empty")),
        ])
        #expect(empty?.problem.contains("empty") == true)
    }

    @Test func systemdCredential() async throws {
        let directory = TemporaryDirectory()
        ProviderTestSupport.write("s3cr3t-value", to: directory.file("acme-secret"), mode: 0o400)
        let options: [String: JSONValue] = [
            "token_endpoint": endpoint, "client_id": "app", "client_secret_credential": "acme-secret",
        ]
        let unset = await error(options)
        #expect(unset?.key == "providers.acme.client_secret_credential")
        #expect(unset?.problem.contains("CREDENTIALS_DIRECTORY") == true)

        let configuration = try #require(
            try OAuth2Configuration.parse(
                ProviderTestSupport.settings(options), environment: ["CREDENTIALS_DIRECTORY": directory.path]))
        #expect(configuration.hasClientSecret)

        var path = options
        path["client_secret_credential"] = "../acme-secret"
        #expect(
            await error(path, environment: ["CREDENTIALS_DIRECTORY": directory.path])?.key
                == "providers.acme.client_secret_credential")
    }

    @Test func twoSecretSourcesAreRefused() async {
        let failure = await error([
            "token_endpoint": endpoint, "client_id": "app", "client_secret_file": "/x", "client_secret_credential": "y",
        ])
        #expect(failure?.key == "providers.acme.client_secret_credential")
    }

    @Test func unknownClientAuthentication() async {
        let failure = await error([
            "token_endpoint": endpoint, "client_id": "app", "client_authentication": "client_secret_magic",
        ])
        #expect(failure?.key == "providers.acme.client_authentication")
        #expect(failure?.problem.contains("client_secret_basic") == true)
    }

    @Test func authenticationMustMatchTheSecret() async {
        let post = await error([
            "token_endpoint": endpoint, "client_id": "app", "client_authentication": "client_secret_post",
        ])
        #expect(post?.key == "providers.acme.client_authentication")

        let directory = TemporaryDirectory()
        ProviderTestSupport.write("s3cr3t-value", to: directory.file("s"), mode: 0o600)
        let none = await error([
            "token_endpoint": endpoint, "client_id": "app", "client_authentication": "none",
            "client_secret_file": .string(directory.file("s")),
        ])
        #expect(none?.key == "providers.acme.client_authentication")
        // A public client may still use Basic with an empty password (T-ID mobile clients).
        #expect(
            await error([
                "token_endpoint": endpoint, "client_id": "app", "client_authentication": "client_secret_basic",
            ])
                == nil)
    }

    @Test func unknownOptionIsNamed() async {
        let failure = await error(["token_endpoint": endpoint, "client_id": "app", "send_scopes": true])
        #expect(failure?.key == "providers.acme.send_scopes")
        #expect(failure?.problem.contains("send_scope") == true)
    }

    @Test func typedOptions() async throws {
        #expect(
            await error(["token_endpoint": endpoint, "client_id": "app", "timeout_seconds": 0])?.key
                == "providers.acme.timeout_seconds")
        #expect(
            await error(["token_endpoint": endpoint, "client_id": "app", "timeout_seconds": "10"])?.key
                == "providers.acme.timeout_seconds")
        #expect(
            await error(["token_endpoint": endpoint, "client_id": "app", "send_scope": "yes"])?.key
                == "providers.acme.send_scope")
        #expect(
            await error(["token_endpoint": endpoint, "client_id": "app", "timeout_seconds": 2.5, "send_scope": true])
                == nil)
        #expect(
            await error(["token_endpoint": endpoint, "client_id": "app", "keep_alive_seconds": -1])?.key
                == "providers.acme.keep_alive_seconds")
        #expect(
            await error(["token_endpoint": endpoint, "client_id": "app", "keep_alive_seconds": 301])?.key
                == "providers.acme.keep_alive_seconds")
        let closing = ProviderTestSupport.settings([
            "token_endpoint": endpoint, "client_id": "app", "keep_alive_seconds": 0,
        ])
        #expect(try OAuth2Configuration.parse(closing, environment: [:])?.httpSettings.keepAliveSeconds == 0)
    }

    @Test func headers() async throws {
        let reserved = await error([
            "token_endpoint": endpoint, "client_id": "app", "headers": ["Authorization": "Bearer x"],
        ])
        #expect(reserved?.key == "providers.acme.headers.Authorization")
        let broken = await error([
            "token_endpoint": endpoint, "client_id": "app", "headers": ["X-A": "one\r\nX-B: two"],
        ])
        #expect(broken?.key == "providers.acme.headers.X-A")
        #expect(await error(["token_endpoint": endpoint, "client_id": "app", "headers": ["X A": "1"]]) != nil)
        #expect(await error(["token_endpoint": endpoint, "client_id": "app", "headers": "X-A: 1"]) != nil)

        let settings = ProviderTestSupport.settings([
            "token_endpoint": endpoint, "client_id": "app", "headers": ["X-SSO-No-Adapter": "true"],
        ])
        let configuration = try #require(try OAuth2Configuration.parse(settings, environment: [:]))
        #expect(configuration.headers.map(\.name) == ["X-SSO-No-Adapter"])
    }

    @Test func caFile() async {
        let directory = TemporaryDirectory()
        #expect(
            await error([
                "token_endpoint": endpoint, "client_id": "app", "ca_file": .string(directory.file("none.pem")),
            ])?
            .key == "providers.acme.ca_file")
        ProviderTestSupport.write("not a certificate", to: directory.file("bad.pem"), mode: 0o644)
        #expect(
            await error(["token_endpoint": endpoint, "client_id": "app", "ca_file": .string(directory.file("bad.pem"))]
            )?
            .key == "providers.acme.ca_file")
        ProviderTestSupport.write(ProviderTestSupport.caPEM, to: directory.file("ca.pem"), mode: 0o644)
        #expect(
            await error(["token_endpoint": endpoint, "client_id": "app", "ca_file": .string(directory.file("ca.pem"))])
                == nil)
    }
}
