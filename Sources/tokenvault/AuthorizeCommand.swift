import ArgumentParser
import Foundation
import TokenVaultClient

/// `tokenvault authorize start|finish`: the two halves of a sign-in, for a backend or a script
/// that owns the redirect itself (`tokenvault login` does both with a listener of its own).
struct AuthorizeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authorize",
        abstract: "Start a sign-in the daemon finishes into ns/name, or finish it with the callback URL.",
        subcommands: [Start.self, Finish.self])

    /// What a sign-in asks for, shared by `authorize start` and `login`.
    struct Request: ParsableArguments {
        @Option(help: "Provider instance name, as configured in the daemon.") var provider: String
        @Option(name: .customLong("scope"), help: "A scope to ask for; repeatable (openid adds a nonce).")
        var scopes: [String] = []
        @Option(name: .customLong("login-hint"), help: "Who is expected to sign in (login_hint).") var loginHint:
            String?
        @Option(help: "The prompt parameter (login, consent, select_account, none).") var prompt: String?
        @Option(name: .customLong("resource"), help: "An RFC 8707 resource indicator; repeatable.")
        var resources: [String] = []
        @Option(
            name: .customLong("param"),
            help: "name=value: an extra parameter the instance's authorization_parameters allow; repeatable.")
        var parameters: [String] = []
        @Option(name: .customLong("label"), help: "key=value label of the credential; repeatable.")
        var labels: [String] = []

        func validate() throws {
            _ = try parseLabels(parameters, what: "--param")
            _ = try parseLabels(labels)
        }

        /// Starts the sign-in with `redirectURI` (nil for a device grant).
        func start(_ id: String, redirectURI: String?, mode: TokenVaultClient.SignInMode, with vault: TokenVaultClient)
            async throws -> TokenVaultClient.SignInStarted
        {
            try await vault.startSignIn(
                id, provider: provider, redirectURI: redirectURI, scopes: scopes, loginHint: loginHint,
                prompt: prompt, resources: resources, parameters: try parseLabels(parameters, what: "--param"),
                labels: labels.isEmpty ? nil : try parseLabels(labels), mode: mode)
        }
    }

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "start",
            abstract: "Start a sign-in and print the authorization URL to send the person to.",
            discussion: """
                The daemon makes the state, PKCE verifier and nonce and keeps them; the URL is all the caller \
                gets (--parameters: the request's parameters as JSON, for a mobile SDK that builds the \
                request itself). Finish with `tokenvault authorize finish` once the redirect comes back.
                """)

        @OptionGroup var client: ClientOptions
        @Argument(help: "Credential id, namespace/name.") var id: String
        @OptionGroup var request: Request
        @Option(
            name: .customLong("redirect-uri"),
            help: "Where the server sends the person back: one of the instance's redirect_uris.")
        var redirectURI: String
        @Flag(help: "Print the request's parameters (JSON) instead of a URL, for a mobile SDK.")
        var parameters = false

        func run() async throws {
            try await client.withClient { vault in
                let started = try await request.start(
                    id, redirectURI: redirectURI, mode: parameters ? .parameters : .url, with: vault)
                if parameters || client.json {
                    try printJSON(started.parameters ?? ["authorization_url": .one(started.authorizationURL ?? "")])
                } else {
                    print(started.authorizationURL ?? "")
                }
            }
        }
    }

    struct Finish: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "finish",
            abstract: "Finish a sign-in with the URL the server redirected to, and print the credential.",
            discussion: """
                The callback URL carries a one-time code, so it is never taken as an argument: --callback-file \
                holds it on its first line (`-`: standard input).
                """)

        @OptionGroup var client: ClientOptions
        @Argument(help: "Credential id, namespace/name.") var id: String
        @Option(
            name: .customLong("callback-file"),
            help: ArgumentHelp(
                "File with the callback URL on its first line; `-` reads standard input.",
                valueName: "file"))
        var callbackFile: String

        func run() async throws {
            guard let url = try SecretInput.lines(callbackFile, what: "--callback-file").first else {
                throw ValidationError("--callback-file \(callbackFile) holds no URL")
            }
            try await client.withClient { vault in
                let (credential, _) = try await vault.finishSignIn(id, callbackURL: url)
                try ClientOutput.metadata(credential, json: client.json)
            }
        }
    }
}
