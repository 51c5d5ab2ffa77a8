import ArgumentParser
import TokenVaultClient

/// `tokenvault providers show NAME` and `providers jwks NAME`: a provider instance as the running
/// daemon uses it (GET /v1/admin/providers/NAME and its /jwks, which need the admin permission).
struct ProvidersCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "providers",
        abstract: "Show what a provider instance discovered, or the public keys to register for private_key_jwt.",
        subcommands: [Show.self, JWKS.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Endpoints, client authentication and id-token checks of instance NAME.",
            discussion: """
                An oauth2 instance given an issuer or a discovery_url reads the server's metadata now if \
                it has not yet, so this also checks that the server answers.
                """)

        @OptionGroup var client: ClientOptions
        @Argument(help: "Provider instance name, as configured in the daemon.") var name: String

        func run() async throws {
            try await client.withClient { vault in
                let details = try await vault.provider(name)
                if client.json { return try printJSON(details) }
                let rows: [(String, String?)] = [
                    ("name", details.name), ("kind", details.kind), ("metadata from", details.metadataSource),
                    ("issuer", details.issuer), ("token endpoint", details.tokenEndpoint),
                    ("revocation", details.revocationEndpoint), ("authorization", details.authorizationEndpoint),
                    ("pushed requests", details.pushedAuthorizationRequestEndpoint),
                    ("device authorization", details.deviceAuthorizationEndpoint), ("jwks", details.jwksURI),
                    ("userinfo", details.userinfoEndpoint), ("client id", details.clientID),
                    (
                        "client auth",
                        details.clientAuthentication.map { method in
                            let supported = details.tokenEndpointAuthMethodsSupported ?? []
                            return supported.isEmpty || supported.contains(method)
                                ? method : method + " (the server lists only " + supported.joined(separator: ", ") + ")"
                        }
                    ),
                    (
                        "id tokens",
                        details.idTokenSignature.map { rule in
                            rule == "tls"
                                ? "trusted from the token endpoint's TLS, not checked by signature"
                                : "checked by signature: "
                                    + (details.idTokenSigningAlgorithms ?? []).joined(separator: ", ")
                        }
                    ),
                    ("sign-in problem", details.signInProblem),
                ]
                for (label, value) in rows {
                    guard let value else { continue }
                    print((label + ":").padding(toLength: 22, withPad: " ", startingAt: 0) + TerminalText.safe(value))
                }
            }
        }
    }

    struct JWKS: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "jwks",
            abstract: "Print the public JWK Set of instance NAME's client key, to register at its server.",
            discussion: """
                The key is derived from the vault's sealed seed and the instance's name: the same on every \
                node, unchanged by rotate-key, never exported. Register this set (or its one key) as the \
                client's jwks at the authorization server, then set client_authentication: private_key_jwt.
                """)

        @OptionGroup var client: ClientOptions
        @Argument(help: "Provider instance name, as configured in the daemon.") var name: String

        func run() async throws {
            try await client.withClient { vault in
                try printJSON(try await vault.providerKeys(name))
            }
        }
    }
}
