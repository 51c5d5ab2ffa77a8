import Foundation
import NIOSSL
import TokenVaultCore

#if canImport(Glibc)
    import Glibc
#endif

/// Typed access to a provider instance's JSON options, shared by every kind; each error names
/// the option (`providers.<name>.<option>`) so an operator sees the exact key and the fix
/// when the daemon starts, not at the first refresh.
struct OptionReader {
    let providerName: String
    let kind: String
    let options: [String: JSONValue]

    init(_ settings: ProviderSettings) {
        providerName = settings.name
        kind = settings.kind
        options = settings.options
    }

    func fail(_ option: String, _ problem: String) -> ProviderConfigurationError {
        .option(providerName, option, problem)
    }

    /// Refuses a `client_secret` in the configuration text (a config file is read by people,
    /// copied into tickets and committed) and any key the kind does not know (a typo must not
    /// silently change behaviour).
    func checkKeys(known: Set<String>) throws(ProviderConfigurationError) {
        if options["client_secret"] != nil {
            throw fail(
                "client_secret",
                "secrets never go in the configuration file; put the secret in a file only the daemon can read "
                    + "and set client_secret_file, or use client_secret_credential (systemd LoadCredential=)")
        }
        if let unknown = options.keys.filter({ !known.contains($0) }).sorted().first {
            throw fail(unknown, "unknown option for kind \(kind) (known: \(known.sorted().joined(separator: ", ")))")
        }
    }

    func string(_ key: String) throws(ProviderConfigurationError) -> String? {
        switch options[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        case let other?: throw fail(key, "expected a string, got \(other.typeName)")
        }
    }

    /// A string that must be there and must not be empty.
    func requiredString(_ key: String, why: String = "required") throws(ProviderConfigurationError) -> String {
        guard let value = try string(key), !value.isEmpty else { throw fail(key, why) }
        return value
    }

    func bool(_ key: String) throws(ProviderConfigurationError) -> Bool? {
        switch options[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        case let other?: throw fail(key, "expected true or false, got \(other.typeName)")
        }
    }

    func number(_ key: String, in range: ClosedRange<Double>) throws(ProviderConfigurationError) -> Double? {
        let value: Double
        switch options[key] {
        case nil, .null?: return nil
        case .integer(let number)?: value = Double(number)
        case .number(let number)?: value = number
        case let other?: throw fail(key, "expected a number, got \(other.typeName)")
        }
        guard range.contains(value) else {
            throw fail(key, "must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return value
    }

    func stringArray(_ key: String) throws(ProviderConfigurationError) -> [String]? {
        switch options[key] {
        case nil, .null?: return nil
        case .array(let items)?:
            return try items.enumerated().map { (index, item) throws(ProviderConfigurationError) in
                guard case .string(let text) = item else {
                    throw fail("\(key)[\(index)]", "expected a string, got \(item.typeName)")
                }
                return text
            }
        case let other?: throw fail(key, "expected an array of strings, got \(other.typeName)")
        }
    }

    /// `redirect_uris`: where the instance's sign-ins may send the person back to, absolute URIs
    /// without a fragment (RFC 6749 section 3.1.2); empty when absent.
    func redirectURIs() throws(ProviderConfigurationError) -> [String] {
        let uris = try stringArray("redirect_uris") ?? []
        for (index, uri) in uris.enumerated() {
            guard let url = URL(string: uri), let scheme = url.scheme, !scheme.isEmpty, url.fragment == nil else {
                throw fail("redirect_uris[\(index)]", "must be an absolute URI without a #fragment")
            }
        }
        return uris
    }

    func endpoint(_ key: String) throws(ProviderConfigurationError) -> EndpointURL? {
        guard let text = try string(key) else { return nil }
        return try EndpointURL.validate(text).mapError { fail(key, $0.problem) }.get()
    }

    /// The option keys `transportSettings` reads besides the kind's own; every kind accepts them.
    static let transportKeys: Set<String> = ["timeout_seconds", "connect_timeout_seconds", "keep_alive_seconds"]

    /// `timeout_seconds` (the read timeout) and `connect_timeout_seconds`, each with its default.
    func timeouts() throws(ProviderConfigurationError) -> CallTimeouts {
        CallTimeouts(
            connectSeconds: try number("connect_timeout_seconds", in: 0.001...60) ?? CallTimeouts.defaultConnectSeconds,
            readSeconds: try number("timeout_seconds", in: 0.001...600) ?? CallTimeouts.defaultReadSeconds)
    }

    /// The client secret from `client_secret_file` or `client_secret_credential` (a name under
    /// systemd's `$CREDENTIALS_DIRECTORY`); nil when neither is given.
    func clientSecret(environment: [String: String]) throws(ProviderConfigurationError) -> SecretBytes? {
        let secretFile = try string("client_secret_file")
        let secretCredential = try string("client_secret_credential")
        switch (secretFile, secretCredential) {
        case (let path?, nil):
            return try SecretFile.read(path).mapError { fail("client_secret_file", $0.problem) }.get()
        case (nil, let credential?):
            guard !credential.isEmpty, !credential.contains("/"), credential != ".", credential != ".." else {
                throw fail("client_secret_credential", "must be a credential name (a file name), not a path")
            }
            guard let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty else {
                throw fail(
                    "client_secret_credential",
                    "$CREDENTIALS_DIRECTORY is not set; run the daemon under systemd with LoadCredential=\(credential):…"
                )
            }
            return try SecretFile.read(directory + "/" + credential)
                .mapError { fail("client_secret_credential", $0.problem) }.get()
        case (nil, nil):
            return nil
        case (_?, _?):
            throw fail(
                "client_secret_credential", "give either client_secret_file or client_secret_credential, not both")
        }
    }

    /// `ca_file`: a PEM bundle the server's certificate must chain to, checked now so a typo
    /// is a start-up error rather than a TLS failure at the first refresh.
    func caFile() throws(ProviderConfigurationError) -> String? {
        guard let caFile = try string("ca_file") else { return nil }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(caFile)
        } catch {
            throw fail("ca_file", "\(caFile) is not a readable PEM certificate bundle (\(error))")
        }
        guard !certificates.isEmpty else { throw fail("ca_file", "\(caFile) holds no PEM certificate") }
        return caFile
    }

    /// The path of an executable file, given as an absolute path: the daemon's `PATH` is not the
    /// operator's shell's, so a bare name would find a different program or none.
    func executable(_ key: String, _ path: String) throws(ProviderConfigurationError) -> String {
        guard path.hasPrefix("/") else { throw fail(key, "'\(path.prefix(200))' must be an absolute path") }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw fail(key, "\(path.prefix(200)) is not a file")
        }
        guard access(path, X_OK) == 0 else { throw fail(key, "\(path.prefix(200)) is not executable") }
        return path
    }

    /// `trust_system_roots`: with `ca_file`, trust the system roots too (default false: `ca_file`
    /// alone is trusted); meaningless without it, so refused there.
    func trustsSystemRoots(caFile: String?) throws(ProviderConfigurationError) -> Bool {
        guard let trusts = try bool("trust_system_roots") else { return false }
        guard caFile != nil else { throw fail("trust_system_roots", "is only meaningful with ca_file") }
        return trusts
    }

    /// What a transport for the instance needs, read from the transport's own options only:
    /// timeouts, `ca_file` and `trust_system_roots`, the client certificate (required by
    /// `sber-id`). No secret the request carries and no environment: the courier builds its
    /// transports with this alone.
    func transportSettings(_ limits: ProviderLimits) throws(ProviderConfigurationError) -> TransportSettings {
        let caFile = try caFile()
        return TransportSettings(
            timeouts: try timeouts(), caFile: caFile, trustsSystemRoots: try trustsSystemRoots(caFile: caFile),
            maximumConnections: max(1, limits.concurrency),
            clientIdentity: try clientIdentity(required: kind == "sber-id"),
            keepAliveSeconds: try number("keep_alive_seconds", in: 0...300) ?? TransportSettings.defaultKeepAliveSeconds
        )
    }

    /// The TLS client identity of `client_certificate_file` (PKCS#12), opened with the password in
    /// `client_certificate_password_file`; nil when not given and not `required`.
    func clientIdentity(required: Bool) throws(ProviderConfigurationError) -> TLSClientIdentity? {
        guard let path = try string("client_certificate_file"), !path.isEmpty else {
            guard !required else {
                throw fail(
                    "client_certificate_file",
                    "required: Sber ID needs mutual TLS with the PKCS#12 issued at registration")
            }
            return nil
        }
        guard let passwordPath = try string("client_certificate_password_file"), !passwordPath.isEmpty else {
            throw fail(
                "client_certificate_password_file",
                "required: a file (mode 0600) holding the password of client_certificate_file")
        }
        let password = try SecretFile.read(passwordPath)
            .mapError { fail("client_certificate_password_file", $0.problem) }.get()
        let bundle: NIOSSLPKCS12Bundle
        do {
            bundle = try password.withUnsafeBytes { try NIOSSLPKCS12Bundle(file: path, passphrase: $0) }
        } catch {
            throw fail(
                "client_certificate_file",
                "\(path) cannot be opened as PKCS#12 with the password in \(passwordPath) "
                    + "(wrong password, or not a PKCS#12 file): \(error)")
        }
        guard let leaf = bundle.certificateChain.first else {
            throw fail("client_certificate_file", "\(path) holds no certificate")
        }
        let notAfter = Date(timeIntervalSince1970: TimeInterval(leaf.notValidAfter))
        guard notAfter > Date() else {
            throw fail(
                "client_certificate_file",
                "\(path): the certificate expired on \(notAfter); ask the server's operator for a new one")
        }
        return TLSClientIdentity(certificateChain: bundle.certificateChain, privateKey: bundle.privateKey)
    }
}
