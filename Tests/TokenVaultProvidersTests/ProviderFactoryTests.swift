import Testing
import TokenVaultCore
import TokenVaultProviders

/// Which provider, if any, each configured instance gets; and shutting them all down.
@Suite struct ProviderFactoryTests {
    @Test func oauth2WithAnEndpointBuildsAProvider() async throws {
        let settings = ProviderTestSupport.settings([
            "token_endpoint": "https://id.example.com/token", "client_id": "a",
        ])
        let provider = try #require(try ProviderFactory.make(settings, environment: [:]))
        #expect(provider.name == "acme")
        #expect(provider.supportsRevocation == false)
        await ProviderTable.shutdown([provider])
    }

    @Test func nameOnlyProvidersHaveNoClient() throws {
        #expect(try ProviderFactory.make(ProviderTestSupport.settings([:]), environment: [:]) == nil)
        for kind in ["tinkoff-id", "sber-id", "esia", "ebs"] {
            #expect(try ProviderFactory.make(ProviderTestSupport.settings([:], kind: kind), environment: [:]) == nil)
        }
    }

    @Test func dpopNeedsATokenEndpointAndTheDaemonsKeys() throws {
        var ebs = ProviderTestSupport.settings([:], kind: "ebs")
        ebs.dpop = true
        #expect(throws: ProviderConfigurationError.self) { _ = try ProviderFactory.make(ebs, environment: [:]) }
        var oauth = ProviderTestSupport.settings(["token_endpoint": "https://id.example.com/token", "client_id": "a"])
        oauth.dpop = true
        do {
            _ = try ProviderFactory.make(oauth, environment: [:])
            Issue.record("built without keys")
        } catch {
            #expect(error.description.contains("providers.acme.dpop: DPoP needs the daemon's keys"), "\(error)")
        }
    }

    @Test func tinkoffIDWithOptionsBuildsItsProvider() async throws {
        let settings = ProviderTestSupport.settings(["client_id": "app"], name: "tid", kind: "tinkoff-id")
        let provider = try #require(try ProviderFactory.make(settings, environment: [:]))
        #expect(provider is TinkoffIDProvider)
        #expect(provider.name == "tid")
        #expect(provider.supportsRevocation)
        await ProviderTable.shutdown([provider])
    }

    /// `expired_unit` is read once, by `ProviderKinds`, with the other settings every kind
    /// shares; `ebs` has no options of its own.
    @Test func ebsTakesOnlyItsExpiredUnit() throws {
        for unit in ExpiredUnit.allCases {
            let parsed = try ProviderKinds().parse(["acme": ["kind": "ebs", "expired_unit": .string(unit.rawValue)]])
            let settings = try #require(parsed["acme"])
            #expect(settings.expiredUnit == unit)
            #expect(settings.options.isEmpty)
            #expect(try ProviderFactory.make(settings, environment: [:]) == nil)
        }
        #expect {
            _ = try ProviderKinds().parse(["acme": ["kind": "ebs", "expired_unit": "minutes"]])
        } throws: { error in
            (error as? ProviderConfigurationError)?.key == "providers.acme.expired_unit"
        }
        #expect {
            _ = try ProviderFactory.make(
                ProviderTestSupport.settings(["token_endpoint": "https://id.example.com/token"], kind: "ebs"),
                environment: [:])
        } throws: { error in
            let error = error as? ProviderConfigurationError
            return error?.key == "providers.acme.token_endpoint" && error?.problem.contains("never refreshed") == true
        }
    }

    @Test func unknownKind() {
        #expect {
            _ = try ProviderFactory.make(ProviderTestSupport.settings([:], kind: "saml"), environment: [:])
        } throws: { error in
            let error = error as? ProviderConfigurationError
            return error?.key == "providers.acme.kind" && error?.problem.contains("oauth2") == true
        }
    }

    @Test func aTableLooksUpByNameAndShutsDownTwiceSafely() async throws {
        let made = try await ProviderTable.make(
            [
                ProviderTestSupport.settings(
                    ["token_endpoint": "https://a.example.com/t", "client_id": "a"], name: "a"),
                ProviderTestSupport.settings([:], name: "b"),
                ProviderTestSupport.settings(
                    [
                        "token_endpoint": "https://c.example.com/t", "revocation_endpoint": "https://c.example.com/r",
                        "client_id": "c",
                    ], name: "c"),
            ], environment: [:])
        #expect(made.names == ["a", "b", "c"], "every instance credentials may name")
        #expect(made.providers.keys.sorted() == ["a", "c"], "objects for those with endpoints")
        #expect(made.providers["a"]?.name == "a")
        #expect(made.providers["c"]?.supportsRevocation == true)
        await ProviderTable.shutdown(Array(made.providers.values))
        await ProviderTable.shutdown(Array(made.providers.values))
    }

    @Test func setStopsAtTheFirstBadInstance() async {
        do {
            _ = try await ProviderTable.make(
                [
                    ProviderTestSupport.settings(
                        ["token_endpoint": "https://a.example.com/t", "client_id": "a"], name: "a"),
                    ProviderTestSupport.settings(
                        ["token_endpoint": "http://b.example.com/t", "client_id": "b"], name: "b"),
                ], environment: [:])
            Issue.record("a plain-http endpoint was accepted")
        } catch {
            #expect(error.key == "providers.b.token_endpoint")
        }
    }
}
