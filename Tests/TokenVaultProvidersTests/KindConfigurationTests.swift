import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

/// Configuration of kinds `tinkoff-id`, `sber-id` and `esia`: defaults, and every refusal
/// names its key.
@Suite struct KindConfigurationTests {
    /// The error building an instance of `kind` from `options` gives, or nil when it builds.
    func error(_ kind: String, _ options: [String: JSONValue]) async -> ProviderConfigurationError? {
        do {
            let provider = try ProviderFactory.make(
                ProviderTestSupport.settings(options, kind: kind), environment: [:])
            if let provider = provider as? any ShutdownableProvider { try? await provider.shutdown() }
            return nil
        } catch {
            return error
        }
    }

    // MARK: tinkoff-id

    @Test func tinkoffIDRefusals() async {
        #expect(await error("tinkoff-id", ["host": "https://id.tbank.ru"])?.key == "providers.acme.client_id")
        let plain = await error("tinkoff-id", ["host": "http://id.tbank.ru", "client_id": "a"])
        #expect(plain?.key == "providers.acme.host")
        #expect(plain?.problem.contains("https is required") == true)
        #expect(await error("tinkoff-id", ["host": "http://127.0.0.1:9", "client_id": "a"]) == nil)
        #expect(
            await error("tinkoff-id", ["client_id": "a", "client_secret": "x"])?.key == "providers.acme.client_secret")
        let typo = await error("tinkoff-id", ["client_id": "a", "token_endpoint": "https://x.example/t"])
        #expect(typo?.key == "providers.acme.token_endpoint")
        #expect(typo?.problem.contains("unknown option for kind tinkoff-id") == true)
        #expect(
            await error("tinkoff-id", ["client_id": "a", "timeout_seconds": 0])?.key == "providers.acme.timeout_seconds"
        )
    }

    @Test func tinkoffIDSecretFileMustBePrivate() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("secret")
        ProviderTestSupport.write("s", to: path, mode: 0o644)
        let failure = await error("tinkoff-id", ["client_id": "a", "client_secret_file": .string(path)])
        #expect(failure?.key == "providers.acme.client_secret_file")
        #expect(failure?.problem.contains("chmod 600") == true)
    }

    // MARK: sber-id

    func sberOptions(_ pki: TestPKI, _ directory: TemporaryDirectory) -> [String: JSONValue] {
        let secret = directory.file("secret")
        ProviderTestSupport.write("s", to: secret, mode: 0o600)
        return [
            "client_id": "a", "client_secret_file": .string(secret),
            "client_certificate_file": .string(pki.clientPKCS12Path),
            "client_certificate_password_file": .string(pki.passwordPath),
        ]
    }

    @Test func sberIDDefaults() async throws {
        let pki = try await TestPKI.shared()
        let directory = TemporaryDirectory()
        let configuration = try #require(
            try SberIDConfiguration.parse(
                ProviderTestSupport.settings(sberOptions(pki, directory), kind: "sber-id"), environment: [:]))
        #expect(configuration.tokenEndpoint == "https://oauth.sber.ru/ru/prod/tokens/v2/oidc")
        #expect(configuration.timeouts == CallTimeouts(connectSeconds: 5, readSeconds: 60))
        #expect(configuration.refreshGrantType == "refresh_token")
        #expect(configuration.caFile == nil)
    }

    @Test(arguments: ["client_id", "client_secret_file", "client_certificate_file", "client_certificate_password_file"])
    func sberIDRequires(option: String) async throws {
        let pki = try await TestPKI.shared()
        let directory = TemporaryDirectory()
        var options = sberOptions(pki, directory)
        options[option] = nil
        let failure = await error("sber-id", options)
        #expect(failure?.key == "providers.acme.\(option)")
        #expect(failure?.problem.contains("required") == true)
    }

    @Test func sberIDWrongCertificatePassword() async throws {
        let pki = try await TestPKI.shared()
        let directory = TemporaryDirectory()
        var options = sberOptions(pki, directory)
        let wrong = directory.file("wrong.pass")
        ProviderTestSupport.write("not-the-password\n", to: wrong, mode: 0o600)
        options["client_certificate_password_file"] = .string(wrong)
        let failure = await error("sber-id", options)
        #expect(failure?.key == "providers.acme.client_certificate_file")
        #expect(failure?.problem.contains("wrong password") == true)
        #expect(failure?.problem.contains("not-the-password") == false)

        options["client_certificate_password_file"] = .string(pki.passwordPath)
        options["client_certificate_file"] = .string(pki.caPath)
        #expect(await error("sber-id", options)?.key == "providers.acme.client_certificate_file", "a PEM, not PKCS#12")
    }

    @Test func sberIDPasswordFileMustBePrivate() async throws {
        let pki = try await TestPKI.shared()
        let directory = TemporaryDirectory()
        var options = sberOptions(pki, directory)
        let open = directory.file("open.pass")
        ProviderTestSupport.write(TestPKI.password, to: open, mode: 0o644)
        options["client_certificate_password_file"] = .string(open)
        #expect(await error("sber-id", options)?.key == "providers.acme.client_certificate_password_file")
    }

    // MARK: esia

    func esiaOptions(_ directory: TemporaryDirectory) -> [String: JSONValue] {
        [
            "client_id": "a", "client_certificate_hash": "ABC", "scope": "openid",
            "redirect_uri": "https://vault.example/cb",
            "signer_command": .array([.string(ESIAProviderTests.script("#!/bin/sh\necho sig", in: directory))]),
        ]
    }

    @Test func esiaDefaults() throws {
        let directory = TemporaryDirectory()
        let configuration = try #require(
            try ESIAConfiguration.parse(
                ProviderTestSupport.settings(esiaOptions(directory), kind: "esia"), environment: [:]))
        #expect(configuration.tokenEndpoint == "https://esia.gosuslugi.ru/aas/oauth2/v3/te")
        #expect(configuration.signerTimeoutSeconds == 5)
        #expect(configuration.timeouts == CallTimeouts(connectSeconds: 5, readSeconds: 60))
    }

    @Test(arguments: ["client_id", "client_certificate_hash", "scope", "redirect_uri", "signer_command"])
    func esiaRequires(option: String) async {
        let directory = TemporaryDirectory()
        var options = esiaOptions(directory)
        options[option] = nil
        let failure = await error("esia", options)
        #expect(failure?.key == "providers.acme.\(option)")
        #expect(failure?.problem.contains("required") == true)
    }

    @Test func esiaSignerMustBeAnAbsoluteExecutablePath() async {
        let directory = TemporaryDirectory()
        var options = esiaOptions(directory)
        options["signer_command"] = .array(["esia-sign", "--key", "k"])
        let relative = await error("esia", options)
        #expect(relative?.key == "providers.acme.signer_command[0]")
        #expect(relative?.problem.contains("absolute path") == true)

        let data = directory.file("not-executable")
        ProviderTestSupport.write("#!/bin/sh\n", to: data, mode: 0o600)
        options["signer_command"] = .array([.string(data)])
        #expect(await error("esia", options)?.problem.contains("not executable") == true)

        options["signer_command"] = "/bin/true"
        #expect(await error("esia", options)?.problem.contains("array of strings") == true)
        options["signer_command"] = .array([])
        #expect(await error("esia", options)?.key == "providers.acme.signer_command")
    }
}
