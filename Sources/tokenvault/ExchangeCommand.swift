import ArgumentParser
import Foundation
import TokenVaultClient

struct ExchangeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exchange",
        abstract:
            "Redeem an authorization code (with its PKCE verifier) at a provider and store the result as ns/name.",
        discussion: """
            The daemon calls the provider's token endpoint with its own client credentials, checks the id \
            token (nonce, audience, expiry) and stores the tokens; nothing is stored if anything fails. \
            Prints the access token (never the refresh token); --json for the metadata too.

            The code and the verifier are secrets, so they are never taken as arguments (every local user \
            can read a process's arguments in /proc): --code-file holds the code on its first line and, \
            optionally, the verifier on its second; --code-verifier-file holds the verifier. `-` reads \
            standard input. Example: printf '%s\\n%s\\n' "$CODE" "$VERIFIER" | tokenvault exchange \
            app/alice --provider sber-id --redirect-uri https://app.example/cb --code-file -
            """)

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @Option(help: "Provider instance name, as configured in the daemon.") var provider: String
    @Option(
        name: .customLong("code-file"),
        help: ArgumentHelp(
            "File with the authorization code (first line) and optionally the PKCE verifier (second line).",
            discussion: "`-` reads standard input.", valueName: "file"))
    var codeFile: String
    @Option(
        name: .customLong("code-verifier-file"),
        help: ArgumentHelp(
            "File with the PKCE code verifier (43-128 characters); `-` reads standard input.", valueName: "file"))
    var codeVerifierFile: String?
    /// Refused with the way to do it: a secret in argv is visible to every local user.
    @Option(help: .hidden) var code: String?
    @Option(name: .customLong("code-verifier"), help: .hidden) var codeVerifier: String?
    @Option(name: .customLong("redirect-uri"), help: "The redirect URI the authorization request used.")
    var redirectURI: String
    @Option(help: "The nonce the authorization request used; the id token must carry it.") var nonce: String?
    @Option(help: "The authorization response's state (sent to providers that want it, e.g. ESIA).") var state: String?
    @Option(name: .customLong("label"), help: "key=value label; repeatable.") var labels: [String] = []

    func validate() throws {
        _ = try parseLabels(labels)
        if code != nil || codeVerifier != nil {
            throw ValidationError(
                "the code and the verifier are not taken as arguments (every local user can read them in "
                    + "/proc/PID/cmdline); pass them with --code-file and --code-verifier-file, or on standard "
                    + "input: printf '%s\\n%s\\n' \"$CODE\" \"$VERIFIER\" | tokenvault exchange ... --code-file -")
        }
        if codeFile == "-", codeVerifierFile == "-" {
            throw ValidationError("only one of --code-file and --code-verifier-file can read standard input")
        }
    }

    func run() async throws {
        let parsed = try parseLabels(labels)
        let (code, verifier) = try readSecrets()
        try await client.withClient { vault in
            let (result, _) = try await vault.exchange(
                id, provider: provider, code: code, codeVerifier: verifier, redirectURI: redirectURI,
                nonce: nonce, state: state, labels: parsed)
            if client.json {
                try ClientOutput.metadata(result.credential, json: true)
            } else {
                print(result.token.accessToken)
            }
        }
    }

    /// The code (first line of --code-file) and the verifier (its second line, or --code-verifier-file).
    private func readSecrets() throws -> (code: String, verifier: String) {
        let codeLines = try SecretInput.lines(codeFile, what: "--code-file")
        guard let code = codeLines.first, !code.isEmpty else {
            throw ValidationError("--code-file \(codeFile) holds no code on its first line")
        }
        if let codeVerifierFile {
            guard let verifier = try SecretInput.lines(codeVerifierFile, what: "--code-verifier-file").first,
                !verifier.isEmpty
            else { throw ValidationError("--code-verifier-file \(codeVerifierFile) holds no verifier") }
            return (code, verifier)
        }
        guard codeLines.count >= 2, !codeLines[1].isEmpty else {
            throw ValidationError(
                "no PKCE verifier: put it on the second line of --code-file or in --code-verifier-file")
        }
        return (code, codeLines[1])
    }
}
