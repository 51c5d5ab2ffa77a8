import Foundation
import Testing
import TokenVaultTesting
import Yams

#if canImport(Glibc)
    import Glibc
#endif

/// The Debian package and what it ships (docs/operations.md): scripts/make-deb.sh run on the
/// built binary, the package's contents, an install into a scratch root (the real system is left
/// alone), lintian, `systemd-analyze` on the units, the default configuration and the Prometheus
/// alert rules. A tool that is not installed skips its part, saying so.
@Suite struct PackagingTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    let directory = TemporaryDirectory("tokenvault-packaging")
    let binary = CommandRunner.locateBinary()

    /// Where dpkg and maintainer scripts look for their tools (root's PATH; dpkg insists on it).
    static let toolPath =
        "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:"
        + (ProcessInfo.processInfo.environment["PATH"] ?? "")

    /// The absolute path of `name` on the PATH, nil if it is not installed.
    static func tool(_ name: String) -> String? {
        for directory in toolPath.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    static func skip(_ what: String, _ why: String) {
        print("PackagingTests: skipped \(what): \(why)")
    }

    @discardableResult
    func run(_ tool: String, _ arguments: [String], environment: [String: String] = [:]) throws
        -> CommandRunner.Result
    {
        let path = tool.hasPrefix("/") ? tool : try #require(Self.tool(tool), "\(tool) is not installed")
        return try CommandRunner(executable: path, environment: ["PATH": Self.toolPath].merging(environment) { $1 })
            .run(arguments)
    }

    /// `tokenVaultVersion` in the sources: what `make deb` packages and `--version` prints.
    static func sourceVersion() throws -> String {
        let source = try String(contentsOfFile: repository + "/Sources/tokenvault/ServeCommand.swift", encoding: .utf8)
        let match = try #require(source.firstMatch(of: #/let tokenVaultVersion = "([^"]+)"/#))
        return String(match.1)
    }

    /// swift-argument-parser's man page writer (`swift build --product generate-manual`; `make
    /// test` builds it): next to the binary, or under .build/debug.
    func generateManual() -> String? {
        let beside = URL(fileURLWithPath: binary).deletingLastPathComponent().appendingPathComponent("generate-manual")
            .path
        return [beside, Self.repository + "/.build/debug/generate-manual"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    // MARK: The package

    @Test func packageHasItsFilesInstallsIntoAScratchRootAndPassesLintian() throws {
        guard Self.tool("dpkg-deb") != nil, Self.tool("dpkg-shlibdeps") != nil else {
            return Self.skip("the package", "dpkg-deb or dpkg-shlibdeps (dpkg-dev) is not installed")
        }
        let manual = try #require(
            generateManual(), "generate-manual is not built: swift build --product generate-manual (make test does)")
        let version = try Self.sourceVersion()
        let output = directory.file("out")
        // The debug build links the Swift runtime from the toolchain: allowed here, refused
        // for `make deb`. Fast compression: this package is only looked at.
        let built = try run(
            "/bin/bash", [Self.repository + "/scripts/make-deb.sh", "--allow-dynamic-swift", binary, version, output],
            environment: ["DEB_COMPRESSION": "gzip", "DEB_COMPRESSION_LEVEL": "1", "GENERATE_MANUAL": manual])
        try #require(built.status == 0, "make-deb.sh: \(built.stderr)")
        let architecture = try run("dpkg", ["--print-architecture"]).stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let package = "\(output)/tokenvault_\(version)-1_\(architecture).deb"
        #expect(built.stdout.hasSuffix(package + "\n"), "\(built.stdout)")
        try #require(FileManager.default.fileExists(atPath: package))

        // Contents: the binary, units, account and directories, the configuration as a conffile,
        // completions, the man page, the documentation and the alert rules.
        let listing = try run("dpkg-deb", ["--contents", package])
        let paths = Set(
            listing.stdout.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) })
        for expected in [
            "./usr/bin/tokenvault", "./usr/bin/tokenvault-mcp", "./lib/systemd/system/tokenvault.service",
            "./lib/systemd/system/tokenvault.socket",
            "./usr/lib/sysusers.d/tokenvault.conf", "./usr/lib/tmpfiles.d/tokenvault.conf",
            "./etc/tokenvault/config.json", "./usr/share/bash-completion/completions/tokenvault",
            "./usr/share/zsh/vendor-completions/_tokenvault", "./usr/share/fish/vendor_completions.d/tokenvault.fish",
            "./usr/share/man/man1/tokenvault.1.gz", "./usr/share/man/man1/tokenvault-mcp.1.gz",
            "./usr/share/doc/tokenvault/README.md",
            "./usr/share/doc/tokenvault/operations.md", "./usr/share/doc/tokenvault/architecture.md",
            "./usr/share/doc/tokenvault/configuration.md", "./usr/share/doc/tokenvault/webhooks.md",
            "./usr/share/doc/tokenvault/scale-out.md", "./usr/share/doc/tokenvault/copyright",
            "./usr/share/doc/tokenvault/changelog.Debian.gz",
            "./usr/share/tokenvault/prometheus/tokenvault-alerts.yml",
            "./usr/share/tokenvault/grafana/tokenvault-dashboard.json", "./usr/share/lintian/overrides/tokenvault",
        ] {
            #expect(paths.contains(expected), "\(expected) is not in the package")
        }
        #expect(listing.stdout.contains("-rwxr-xr-x root/root"), "the binary is root-owned and executable")
        let conffiles = try run("dpkg-deb", ["--info", package, "conffiles"])
        #expect(conffiles.stdout == "/etc/tokenvault/config.json\n", "\(conffiles.stdout)")
        let fields = try run("dpkg-deb", ["--field", package, "Package", "Version", "Depends"]).stdout
        #expect(fields.contains("Version: \(version)-1"), "\(fields)")
        #expect(
            fields.contains("libsodium23") && fields.contains("libsqlite3-0") && fields.contains("libc6"), "\(fields)")
        // The man page covers the subcommands; the bash completion has no #! line.
        let extracted = directory.file("extracted")
        try run("dpkg-deb", ["--extract", package, extracted])
        let page = try run("/bin/sh", ["-c", "gzip -dc '\(extracted)/usr/share/man/man1/tokenvault.1.gz'"]).stdout
        #expect(
            page.contains(".Sh NAME") && page.contains("serve") && page.contains("Fl -if-missing"),
            "\(page.prefix(300))")
        let completion = try String(
            contentsOfFile: extracted + "/usr/share/bash-completion/completions/tokenvault", encoding: .utf8)
        #expect(!completion.hasPrefix("#!") && completion.contains("tokenvault"))

        try installIntoScratchRoot(package, version: version)
        try lintian(package)
    }

    /// dpkg --root with the maintainer scripts run outside a chroot (DPKG_ROOT set): the account,
    /// directories, key and unit links appear inside the root only. Then an upgrade in place
    /// keeps an edited configuration and the key, and a purge keeps the key.
    func installIntoScratchRoot(_ package: String, version: String) throws {
        guard getuid() == 0 else {
            return Self.skip("the install into a scratch root", "dpkg --root needs root here")
        }
        guard Self.tool("dpkg") != nil else { return Self.skip("the install into a scratch root", "no dpkg") }
        let root = directory.file("root")
        for path in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"] {
            try FileManager.default.createDirectory(atPath: "\(root)/\(path)", withIntermediateDirectories: true)
        }
        for file in ["status", "available"] {
            writeFile("\(root)/var/lib/dpkg/\(file)")
        }
        let hostHadKey = FileManager.default.fileExists(atPath: "/etc/tokenvault/tokenvault.key")
        let hostHadUser = getpwnam("tokenvault") != nil
        // The package's library dependencies are not in the empty root.
        let dpkg = ["--root=\(root)", "--force-script-chrootless", "--force-depends", "--log=/dev/null"]
        let installed = try run("dpkg", dpkg + ["--install", package])
        try #require(installed.status == 0, "dpkg --install: \(installed.stdout)\(installed.stderr)")

        let key = root + "/etc/tokenvault/tokenvault.key"
        let keyAttributes = try FileManager.default.attributesOfItem(atPath: key)
        #expect(keyAttributes[.posixPermissions] as? Int == 0o600)
        #expect((keyAttributes[.ownerAccountID] as? NSNumber)?.intValue == 0)
        let keyText = try String(contentsOfFile: key, encoding: .utf8)
        #expect(keyText.count == 65 && keyText.dropLast().allSatisfy(\.isHexDigit), "64 hex digits and a newline")
        #expect(installed.stdout.contains("generated a new master key at /etc/tokenvault/tokenvault.key"))
        if Self.tool("systemd-sysusers") != nil {
            let passwd = try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8)
            #expect(passwd.contains("tokenvault:x:") && passwd.contains(":/var/lib/tokenvault:/usr/sbin/nologin"))
            let data = try FileManager.default.attributesOfItem(atPath: root + "/var/lib/tokenvault")
            #expect(data[.posixPermissions] as? Int == 0o700)
            let configuration = try FileManager.default.attributesOfItem(atPath: root + "/etc/tokenvault")
            #expect(configuration[.posixPermissions] as? Int == 0o750)
            // API callers join a group of their own, never the one that may enter /etc/tokenvault.
            let groups = try String(contentsOfFile: root + "/etc/group", encoding: .utf8).split(separator: "\n")
            let gid = { (name: String) in
                groups.first { $0.hasPrefix(name + ":") }.map {
                    Int($0.split(separator: ":", omittingEmptySubsequences: false)[2])
                }
            }
            let callers = try #require(gid("tokenvault-clients"), "\(groups)")
            #expect((configuration[.groupOwnerAccountID] as? NSNumber)?.intValue == gid("tokenvault") ?? -1)
            #expect(callers != gid("tokenvault") ?? -1)
            let socketUnit = try String(contentsOfFile: root + "/lib/systemd/system/tokenvault.socket", encoding: .utf8)
            #expect(socketUnit.contains("\nSocketGroup=tokenvault-clients\n"))
        }
        for link in [
            "etc/systemd/system/multi-user.target.wants/tokenvault.service",
            "etc/systemd/system/sockets.target.wants/tokenvault.socket",
        ] {
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(root)/\(link)")) ?? ""
            #expect(target == "/lib/systemd/system/" + URL(fileURLWithPath: link).lastPathComponent, "\(link)")
        }
        // Nothing of this reached the real system.
        #expect(FileManager.default.fileExists(atPath: "/etc/tokenvault/tokenvault.key") == hostHadKey)
        #expect((getpwnam("tokenvault") != nil) == hostHadUser)

        let printed = try run(root + "/usr/bin/tokenvault", ["--version"])
        #expect(printed.status == 0 && printed.stdout == version + "\n", "\(printed.stdout)\(printed.stderr)")

        // Reinstalled over itself with an edited configuration: dpkg keeps the edit (a conffile)
        // and the postinst leaves the key alone.
        let configuration = root + "/etc/tokenvault/config.json"
        try Data(#"{"//": "edited by the operator"}"#.utf8).write(to: URL(fileURLWithPath: configuration))
        let again = try run("dpkg", dpkg + ["--force-confold", "--install", package])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try String(contentsOfFile: configuration, encoding: .utf8).contains("edited by the operator"))
        #expect(try String(contentsOfFile: key, encoding: .utf8) == keyText)

        let purged = try run("dpkg", dpkg + ["--purge", "tokenvault"])
        #expect(purged.status == 0, "\(purged.stderr)")
        #expect(!FileManager.default.fileExists(atPath: configuration))
        #expect(!FileManager.default.fileExists(atPath: root + "/usr/bin/tokenvault"))
        #expect(try String(contentsOfFile: key, encoding: .utf8) == keyText, "purge keeps the master key")
    }

    /// No error and no warning. The debug build's RUNPATH into the toolchain is the one
    /// expected finding (`make deb` packages a statically linked release build without one).
    func lintian(_ package: String) throws {
        guard Self.tool("lintian") != nil else {
            return Self.skip("lintian", "lintian is not installed (scripts/install-deps.sh --test installs it)")
        }
        let result = try run("lintian", ["--suppress-tags", "custom-library-search-path", package])
        let findings = result.stdout.split(separator: "\n").filter { $0.hasPrefix("E:") || $0.hasPrefix("W:") }
        #expect(findings.isEmpty, "lintian: \(findings.joined(separator: "\n"))")
        #expect(result.status == 0, "lintian exited \(result.status): \(result.stdout)\(result.stderr)")
    }

    // MARK: The units

    /// `systemd-analyze verify` finds nothing to say about the units (with ExecStart= pointing
    /// at the built binary, and the man page left unchecked: it is not installed here), and
    /// `systemd-analyze security` rates the service's exposure at most 2.0 (docs/operations.md
    /// records the score).
    @Test func unitsPassSystemdAnalyze() throws {
        guard Self.tool("systemd-analyze") != nil else {
            return Self.skip("systemd-analyze verify", "systemd-analyze is not installed")
        }
        let units = directory.file("units")
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: false)
        for name in ["tokenvault.service", "tokenvault.socket"] {
            let text = try String(contentsOfFile: Self.repository + "/packaging/systemd/" + name, encoding: .utf8)
            try Data(text.replacingOccurrences(of: "/usr/bin/tokenvault", with: binary).utf8)
                .write(to: URL(fileURLWithPath: units + "/" + name))
        }
        let verified = try run(
            "systemd-analyze", ["verify", "--man=no", units + "/tokenvault.service", units + "/tokenvault.socket"])
        #expect(verified.status == 0 && verified.stdout.isEmpty && verified.stderr.isEmpty, "\(verified.stderr)")

        let security = try run("systemd-analyze", ["security", "--offline=yes", units + "/tokenvault.service"])
        let score = try #require(
            security.stdout.firstMatch(of: #/Overall exposure level for tokenvault.service: ([0-9.]+)/#),
            "\(security.stdout)\(security.stderr)")
        #expect(try #require(Double(score.1)) <= 2.0, "exposure \(score.1)")
    }

    // MARK: The configuration

    /// The shipped /etc/tokenvault/config.json is a JSON object, and the daemon starts with it;
    /// every metric the alert rules name is one the daemon exports.
    @Test func shippedConfigurationStartsTheDaemonAndAlertRulesNameItsMetrics() throws {
        let shipped = Self.repository + "/packaging/config.json"
        let parsed = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: shipped)))
        let object = try #require(parsed as? [String: Any], "config.json is a JSON object")
        #expect(
            Set(object.keys.filter { !$0.hasPrefix("//") }).isSubset(of: [
                "socket", "limits", "server", "audit", "storage", "providers", "access", "log",
            ]))

        let dataDir = directory.file("data")
        let initialised = try CommandRunner().run(["init", "--if-missing", "--data-dir", dataDir, "--config", shipped])
        try #require(initialised.status == 0, "\(initialised.stderr)")
        let daemon = try DaemonProcess(
            arguments: ["--data-dir", dataDir, "--config", shipped], socketPath: dataDir + "/run/tokenvault.sock",
            logDirectory: directory.path)
        defer { daemon.terminate() }
        let metrics = try UnixSocketHTTP.request(daemon.socketPath, "GET", "/metrics").text

        let rules = try String(
            contentsOfFile: Self.repository + "/packaging/prometheus/tokenvault-alerts.yml", encoding: .utf8)
        let named = Set(rules.matches(of: #/tokenvault_[a-z_]+/#).map { String($0.output) })
        #expect(named.count >= 10)
        // Exported on a PostgreSQL vault only.
        let postgresOnly = [
            "tokenvault_change_feed_connected", "tokenvault_clock_skew_refusing", "tokenvault_clock_offset_seconds",
        ]
        for name in named.subtracting(postgresOnly) {
            #expect(
                metrics.contains("\n\(name){") || metrics.contains("\n\(name) "),
                "the alert rules name \(name), which the daemon does not export")
        }
    }

    // MARK: The alert rules

    /// Every rule has an alert name, an expression, a severity, a summary and a runbook line;
    /// with promtool installed, `promtool check rules` and the rules' unit tests pass too.
    @Test func alertRulesAreWellFormed() throws {
        let directory = Self.repository + "/packaging/prometheus"
        let text = try String(contentsOfFile: directory + "/tokenvault-alerts.yml", encoding: .utf8)
        let document = try #require(try Yams.load(yaml: text) as? [String: Any])
        let groups = try #require(document["groups"] as? [[String: Any]])
        let rules = groups.flatMap { ($0["rules"] as? [[String: Any]]) ?? [] }
        let names = rules.compactMap { $0["alert"] as? String }
        #expect(names.count == rules.count && Set(names).count == names.count, "unique alert names")
        for expected in [
            "TokenVaultDown", "TokenVaultDatabaseDown", "TokenVaultCredentialsNeedReauth",
            "TokenVaultProviderCircuitOpen", "TokenVaultProviderMisconfigured", "TokenVaultRefreshFailuresRising",
            "TokenVaultRefreshesOverdue", "TokenVaultAuditWriteFailures",
        ] {
            #expect(names.contains(expected), "\(expected)")
        }
        for rule in rules {
            let name = rule["alert"] as? String ?? "?"
            #expect(!((rule["expr"] as? String) ?? "").isEmpty, "\(name): expr")
            let severity = (rule["labels"] as? [String: Any])?["severity"] as? String
            #expect(severity == "warning" || severity == "critical", "\(name): severity")
            let annotations = rule["annotations"] as? [String: Any] ?? [:]
            let summary = annotations["summary"] as? String ?? ""
            let runbook = annotations["runbook"] as? String ?? ""
            #expect(!summary.isEmpty, "\(name): summary")
            #expect(!runbook.isEmpty, "\(name): runbook")
        }

        guard Self.tool("promtool") != nil else {
            return Self.skip("promtool check/test rules", "promtool is not installed")
        }
        let checked = try run("promtool", ["check", "rules", directory + "/tokenvault-alerts.yml"])
        #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")
        let tested = try CommandRunner(executable: try #require(Self.tool("promtool"))).run(
            ["test", "rules", directory + "/tokenvault-alerts.test.yml"])
        #expect(tested.status == 0, "\(tested.stdout)\(tested.stderr)")
    }
}
