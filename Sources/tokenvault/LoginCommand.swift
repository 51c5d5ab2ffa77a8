import ArgumentParser
import Foundation
import TokenVaultClient

#if canImport(Glibc)
    import Glibc
#endif

/// `tokenvault login`: a whole sign-in from a terminal. It listens on an ephemeral loopback port,
/// has the daemon start the authorization with that redirect, prints the URL (and opens it when
/// there is a display), waits for the one callback, finishes through the daemon, answers the
/// browser with a short page, and prints the credential. With `--device` it starts a device grant
/// instead: it prints the code and the page to enter it on, and waits while the daemon polls.
struct LoginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "login",
        abstract: "Sign a person in through a browser and store the result as ns/name.",
        discussion: """
            The instance must list a loopback redirect URI, http://127.0.0.1/callback (any port is then \
            admitted), in its redirect_uris, and the server must accept it. The daemon keeps the state, PKCE \
            verifier and nonce; this command only carries the redirect back. A credential that exists is \
            repaired in place (same id and labels). On a host other people use, prefer --no-browser and \
            paste the URL yourself: a browser started for you has the URL in its arguments, which every \
            local user can read, and with it another user could sign in as themselves and answer first.

            --device uses the device grant (RFC 8628) instead, for a host without a browser: the instance \
            needs a device_authorization_endpoint (configured or discovered) and no redirect. The command \
            prints the verification page and the code to enter there, and waits while the daemon polls the \
            server; it may be interrupted, the daemon goes on polling (`GET …/authorization` shows it).
            """)

    @OptionGroup var client: ClientOptions
    @Argument(help: "Credential id, namespace/name.") var id: String
    @OptionGroup var request: AuthorizeCommand.Request
    @Option(name: .customLong("redirect-path"), help: "The path of the loopback redirect URI.")
    var redirectPath = "/callback"
    @Flag(name: .customLong("no-browser"), help: "Only print the URL; do not open a browser.") var noBrowser = false
    @Flag(help: "Use the device grant: print a code to enter at the server's page; the daemon polls.")
    var device = false
    @Option(help: "Seconds to wait for the redirect.") var timeout: Double = 600

    func validate() throws {
        guard redirectPath.hasPrefix("/"), !redirectPath.contains("?"), !redirectPath.contains("#") else {
            throw ValidationError("--redirect-path must be a path such as /callback")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() async throws {
        if device { return try await runDevice() }
        let listener = try LoopbackCallback(path: redirectPath)
        try await client.withClient { vault in
            let started = try await request.start(id, redirectURI: listener.redirectURI, mode: .url, with: vault)
            guard let url = started.authorizationURL else { throw LoginFailure("the daemon answered no URL") }
            TerminalText.error("Open this URL in a browser to sign in (waiting for \(listener.redirectURI)):")
            // Written at once, unbuffered: a script reading the URL must not wait for the exit. With
            // --json, standard output is the credential's document alone.
            (client.json ? FileHandle.standardError : FileHandle.standardOutput).write(Data((url + "\n").utf8))
            if !noBrowser { Self.openBrowser(url) }
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                let callback = try listener.wait(until: deadline)
                do {
                    let (credential, _) = try await vault.finishSignIn(id, callbackURL: callback.url)
                    callback.answer(ok: true, "The credential \(id) is stored in the vault.")
                    try ClientOutput.metadata(credential, json: client.json)
                    return
                } catch let error as TokenVaultClientError {
                    callback.answer(ok: false, error.description)
                    // Any local process can reach the port: a request naming no waiting sign-in
                    // (it cannot know the state) is not the browser's, so the real one is waited for.
                    guard Self.isNotTheSignIn(error) else { throw error }
                }
            }
        }
    }

    /// The device grant: the daemon polls the server; this command waits until its grant (the
    /// caller's one with its expiry) no longer waits, and reports how the caller's last sign-in
    /// into the credential ended.
    private func runDevice() async throws {
        try await client.withClient { vault in
            let started = try await request.start(id, redirectURI: nil, mode: .device, with: vault)
            guard let userCode = started.userCode, let page = started.verificationURI else {
                throw LoginFailure("the daemon answered no user code")
            }
            TerminalText.error(
                "To sign in, open \(page) and enter the code \(userCode) (valid until \(started.expiresAt)).")
            // As with the browser sign-in: the page on standard output at once, unless --json.
            let link = started.verificationURIComplete ?? page
            (client.json ? FileHandle.standardError : FileHandle.standardOutput).write(Data((link + "\n").utf8))
            let deadline = Date().addingTimeInterval(timeout)
            let pause = Double(min(max(started.interval ?? 5, 1), 5))
            while Date() < deadline {
                try await Task.sleep(for: .seconds(pause))
                let status = try await vault.signInStatus(id)
                guard !status.pending.contains(where: { $0.expiresAt == started.expiresAt }) else { continue }
                guard let last = status.last, last.outcome == "authorized" else {
                    throw LoginFailure("the sign-in ended without tokens: \(status.last?.reason ?? "unknown reason")")
                }
                try ClientOutput.metadata(try await vault.metadata(id), json: client.json)
                return
            }
            throw LoginFailure(
                "no approval within \(Int(timeout)) s; the daemon goes on polling until the code expires")
        }
    }

    /// A callback the daemon refused without spending the sign-in: no sign-in waits under its
    /// state, or it is not one answer.
    static func isNotTheSignIn(_ error: TokenVaultClientError) -> Bool {
        ["authorization_unknown", "invalid_callback"].contains(error.code ?? "")
    }

    /// `xdg-open URL` when there is a display; without one, or when it fails, the printed URL is
    /// the way.
    static func openBrowser(_ url: String) {
        let environment = ProcessInfo.processInfo.environment
        guard environment["DISPLAY"] != nil || environment["WAYLAND_DISPLAY"] != nil else { return }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor in Int32(0)...2 {
            posix_spawn_file_actions_addopen(
                &actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("xdg-open"), strdup(url), nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawnp(&pid, "xdg-open", &actions, nil, argv, environ) == 0 else { return }
        // Reaped in the background: a browser that stays open must not hold the sign-in up.
        let child = pid
        Thread.detachNewThread {
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
    }
}

/// A login that could not go on (no listener, no redirect in time): one line and exit 1, not the
/// usage text of a mistyped command.
struct LoginFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
