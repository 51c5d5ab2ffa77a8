import Foundation
import Testing
import TokenVaultCore
import TokenVaultProviders
import TokenVaultTesting

#if canImport(Glibc)
    import Glibc
#endif

/// Kind `esia` against a `TestOAuthServer` that echoes `state` and answers in ESIA's error
/// shape, with shell scripts as signers: one that signs (`sig-` + SHA-256 of stdin, keeping a
/// copy of what it was given), one that fails, one that hangs, one that prints nothing.
@Suite struct ESIAProviderTests {
    typealias Fixture = KindFixture<ESIAProvider>

    static let scope = "openid fullname"
    static let redirectURI = "https://vault.example/esia/callback"
    static let certificateHash = "5D1E7A0C9B3F42E8A6D0C1B2E3F4A5B6C7D8E9F0A1B2C3D4E5F6A7B8C9D0E1F2"

    enum Signer {
        static let good = """
            #!/bin/sh
            cat > "$0.in"
            printf 'sig-%s\\n' "$(sha256sum < "$0.in" | cut -c1-64)"
            """
        static let failing = """
            #!/bin/sh
            cat > /dev/null
            echo "key container locked: PIN required" >&2
            echo "second line never shown" >&2
            exit 3
            """
        static let slow = """
            #!/bin/sh
            sleep 600 &
            echo $! > "$0.child"
            wait
            """
        static let silent = """
            #!/bin/sh
            cat > /dev/null
            """
        static let notBase64URL = """
            #!/bin/sh
            cat > /dev/null
            echo 'c2ln+/w=='
            """
    }

    /// Writes an executable script, closed before anything can run it: the descriptor is
    /// close-on-exec, so a process spawned meanwhile by another test cannot hold it open for
    /// writing (which would make running the script fail with ETXTBSY).
    static func script(_ text: String, in directory: TemporaryDirectory, name: String = "signer.sh") -> String {
        let path = directory.file(name)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        precondition(descriptor >= 0, "cannot write \(path)")
        let bytes = Array((text + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress!, $0.count) }
        close(descriptor)
        return path
    }

    static func run(
        signer: String = Signer.good, signerTimeout: Double? = nil,
        server configure: @escaping @Sendable (inout TestOAuthServer.Options) -> Void = { _ in },
        _ body: (Fixture) async throws -> Void
    ) async throws {
        try await Fixture.run(
            server: { options in
                options.clientAuthentication = .none
                options.echoState = true
                options.errorShape = .esia
                configure(&options)
            },
            provider: { server, directory in
                var options: [String: JSONValue] = [
                    "token_endpoint": .string(server.tokenURL), "client_id": "vault-client",
                    "client_certificate_hash": .string(certificateHash),
                    // Run by /bin/sh rather than executed itself: a script written just now can
                    // still be open for writing in a child another test is spawning at that
                    // instant (until its exec), and executing it would then fail with ETXTBSY.
                    "signer_command": .array(["/bin/sh", .string(script(signer, in: directory)), "--profile", "vault"]),
                    "scope": .string(scope), "redirect_uri": .string(redirectURI),
                ]
                if let signerTimeout { options["signer_timeout_seconds"] = .number(signerTimeout) }
                return try ESIAProvider(
                    settings: ProviderTestSupport.settings(options, name: "esia", kind: "esia"), environment: [:])
            }, body)
    }

    /// What the good signer printed for `signed`: `sig-` and the hex SHA-256, compared through
    /// the base64url form `PKCE.challenge` gives.
    static func isGoodSignature(_ secret: String?, of signed: String) -> Bool {
        guard let secret, secret.hasPrefix("sig-"), secret.count == 68 else { return false }
        return PKCE.base64URL(RawBytes.hex(String(secret.dropFirst(4)))) == PKCE.challenge(for: signed)
    }

    static func parseTimestamp(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy.MM.dd HH:mm:ss Z"
        return formatter.date(from: text)
    }

    // MARK: Wire

    @Test func refreshSendsTheSignedForm() async throws {
        try await Self.run { fixture in
            let issued = fixture.server.issue(scopes: ["openid", "fullname"])
            let before = Date()
            let payload = try await fixture.refresh(issued.refreshToken)
            let after = Date()

            let request = try #require(fixture.server.requests.last)
            #expect(request.method == "POST")
            #expect(request.path == "/token")
            #expect(request.headers["authorization"] == nil)
            #expect(
                request.formFields.map(\.name) == [
                    "client_id", "grant_type", "refresh_token", "state", "timestamp", "client_secret", "scope",
                    "redirect_uri", "token_type", "client_certificate_hash",
                ])
            let form = request.form
            #expect(form["client_id"] == "vault-client")
            #expect(form["grant_type"] == "refresh_token")
            #expect(form["refresh_token"] == issued.refreshToken)
            #expect(form["scope"] == Self.scope)
            #expect(form["redirect_uri"] == Self.redirectURI)
            #expect(form["token_type"] == "Bearer")
            #expect(form["client_certificate_hash"] == Self.certificateHash)

            let state = try #require(form["state"])
            #expect(UUID(uuidString: state) != nil && state == state.lowercased(), "\(state)")
            let timestamp = try #require(form["timestamp"])
            #expect(timestamp.wholeMatch(of: /\d{4}\.\d{2}\.\d{2} \d{2}:\d{2}:\d{2} \+0000/) != nil, "\(timestamp)")
            let sent = try #require(Self.parseTimestamp(timestamp))
            #expect(sent >= before.addingTimeInterval(-1) && sent <= after.addingTimeInterval(1))

            let signed = String(decoding: RawBytes.read(fixture.directory.file("signer.sh.in")), as: UTF8.self)
            #expect(signed == "vault-client" + Self.scope + timestamp + state + Self.redirectURI)
            #expect(Self.isGoodSignature(form["client_secret"], of: signed), "\(form["client_secret"] ?? "-")")

            #expect(payload.secrets.refreshToken?.revealString() != issued.refreshToken)
            #expect(fixture.server.isSpent(issued.refreshToken))
            #expect(!fixture.provider.supportsRevocation)
        }
    }

    @Test func everyRequestHasItsOwnStateAndSignature() async throws {
        try await Self.run { fixture in
            let first = try await fixture.refresh(fixture.server.issue().refreshToken)
            _ = try await fixture.refresh(try #require(first.secrets.refreshToken?.revealString()))
            let forms = fixture.server.requests.map(\.form)
            #expect(forms.count == 2)
            #expect(forms[0]["state"] != forms[1]["state"])
            #expect(forms[0]["client_secret"] != forms[1]["client_secret"])
        }
    }

    // MARK: State

    @Test func stateMismatchIsAnUnknownOutcome() async throws {
        try await Self.run { fixture in
            let body =
                #"{"access_token":"at-x","refresh_token":"rt-x","token_type":"Bearer","expires_in":3600,"#
                + #""state":"6f1c2b7e-0000-4000-8000-000000000000"}"#
            fixture.server.script(.raw(status: 200, headers: ["Content-Type": "application/json"], body: body))
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .unknownOutcome)
            #expect(failure.code == "state_mismatch")
            #expect(ProviderFailure.lostAnswerCodes.contains(failure.code), "a later invalid_grant is explained")
            #expect(!failure.message.contains("6f1c2b7e"))
        }
    }

    @Test func missingStateIsAMismatchToo() async throws {
        try await Self.run(server: { $0.echoState = false }) { fixture in
            let issued = fixture.server.issue()
            let failure = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(failure.code == "state_mismatch")
            #expect(fixture.server.isSpent(issued.refreshToken), "ESIA did rotate: hence unknown outcome")
        }
    }

    // MARK: Signer

    @Test func failingSignerSendsNothing() async throws {
        try await Self.run(signer: Signer.failing) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .misconfigured)
            #expect(failure.code == "signer_failed")
            #expect(failure.message.contains("status 3"), "\(failure.message)")
            #expect(failure.message.contains("key container locked: PIN required"))
            #expect(!failure.message.contains("second line"))
            #expect(!failure.message.contains("vault-client" + Self.scope), "not the string to sign")
            #expect(fixture.server.requests.isEmpty)
        }
    }

    @Test func slowSignerIsKilledAtTheTimeout() async throws {
        try await Self.run(signer: Signer.slow, signerTimeout: 0.5) { fixture in
            let started = ContinuousClock.now
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            let elapsed = ContinuousClock.now - started
            #expect(failure.kind == .transient)
            #expect(failure.code == "signer_timeout")
            // Killed at 0.5 s, not after the signer's 600 s; the margin is wide because a loaded
            // machine can take seconds to start the script, and only the order of magnitude proves the kill.
            #expect(elapsed < .seconds(60), "\(elapsed)")
            #expect(fixture.server.requests.isEmpty)

            // What the script started went with it (the signer runs in its own process group).
            let child = String(decoding: RawBytes.read(fixture.directory.file("signer.sh.child")), as: UTF8.self)
            let pid = try #require(Int32(child.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(await Self.isGone(pid), "sleep \(pid) still runs")
        }
    }

    /// No such process, or a zombie waiting to be reaped by init.
    static func isGone(_ pid: Int32) async -> Bool {
        for _ in 0..<50 {
            guard kill(pid, 0) == 0 else { return true }
            let stat = String(decoding: RawBytes.read("/proc/\(pid)/stat"), as: UTF8.self)
            if let close = stat.lastIndex(of: ")"), stat[close...].dropFirst(2).first == "Z" { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test(arguments: [Signer.silent, Signer.notBase64URL])
    func unusableSignerOutputSendsNothing(signer: String) async throws {
        try await Self.run(signer: signer) { fixture in
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == .misconfigured)
            #expect(failure.code == "signer_failed")
            #expect(fixture.server.requests.isEmpty)
        }
    }

    // MARK: Errors

    @Test(arguments: [
        ("invalid_grant", "ESIA-007011: refresh token expired", ProviderFailure.Kind.invalidGrant, "ESIA-007011"),
        ("server_error", "ESIA-007007: internal error", .transient, "ESIA-007007"),
        ("temporarily_unavailable", "ESIA-007008: overloaded", .transient, "ESIA-007008"),
        ("invalid_request", "ESIA-007015: timestamp out of range", .misconfigured, "ESIA-007015"),
        ("invalid_client", "ESIA-007053: signature check failed", .misconfigured, "ESIA-007053"),
    ])
    func esiaErrorsAreClassified(
        error: String, description: String, kind: ProviderFailure.Kind, code: String
    ) async throws {
        try await Self.run { fixture in
            fixture.server.script(.error(status: 400, code: error, description: description))
            let failure = try #require(await fixture.refreshFailure(fixture.server.issue().refreshToken))
            #expect(failure.kind == kind)
            #expect(failure.code.rawValue == code)
        }
    }

    @Test func spentRefreshTokenIsInvalidGrant() async throws {
        try await Self.run { fixture in
            let issued = fixture.server.issue()
            _ = try await fixture.refresh(issued.refreshToken)
            let failure = try #require(await fixture.refreshFailure(issued.refreshToken))
            #expect(failure.kind == .invalidGrant)
            #expect(failure.code == "ESIA-007011")
        }
    }

    @Test func noRevocation() async throws {
        try await Self.run { fixture in
            #expect(await fixture.revokeFailure("rt-any")?.code == "revocation_not_supported")
            #expect(fixture.server.requests.isEmpty)
        }
    }
}
