import Foundation
import Synchronization

/// Certificates for mutual-TLS tests, made fresh by `/usr/bin/openssl` in a private temporary
/// directory (nothing secret is committed, nothing expires in the repository): a test CA, a
/// server certificate for 127.0.0.1 and localhost, a client certificate from the CA packed with
/// its key into a password-protected PKCS#12, and a second client certificate from another CA
/// that the server does not trust. EC P-256 keys, so the whole set takes a fraction of a second.
public struct TestPKI: Sendable {
    public let directory: TemporaryDirectory
    /// The CA that signed the server and the trusted client certificate (PEM).
    public var caPath: String { directory.file("ca.pem") }
    public var serverCertificatePath: String { directory.file("server.pem") }
    public var serverKeyPath: String { directory.file("server.key") }
    /// The trusted client's certificate and key as PKCS#12, encrypted with `passwordPath`'s password.
    public var clientPKCS12Path: String { directory.file("client.p12") }
    /// The PKCS#12 password followed by a newline, mode 0600.
    public var passwordPath: String { directory.file("p12.pass") }
    /// A client certificate from another CA (`foreign-ca.pem`), same password.
    public var foreignClientPKCS12Path: String { directory.file("foreign-client.p12") }

    public static let password = "p12-test-password"

    /// One set for the whole test process, made on first use: the certificates are only read, and
    /// a dozen openssl runs per test would load the machine enough to upset timing tests. Its
    /// directory is removed when the process exits.
    public static func shared() async throws -> TestPKI { try await sharedSet.value }

    private static let sharedSet = Task<TestPKI, any Error> {
        let pki = try await make()
        sharedPath.withLock { $0 = pki.directory.path }
        atexit {
            if let path = TestPKI.sharedPath.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
        return pki
    }

    private static let sharedPath = Mutex<String?>(nil)

    /// Runs openssl on a thread of its own: a dozen blocking process waits on the Swift
    /// concurrency pool (two threads on a two-core machine) would stall every other test.
    public static func make() async throws -> TestPKI {
        let pki = TestPKI(directory: TemporaryDirectory("tokenvault-pki"))
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread { continuation.resume(with: Result { try pki.generate() }) }.start()
        }
        return pki
    }

    /// The server side: HTTPS with this server certificate, client certificates from the CA required.
    public func serverTLS(requireClientCertificate: Bool = true) -> TestServerTLS {
        TestServerTLS(
            certificatePath: serverCertificatePath, privateKeyPath: serverKeyPath, trustedClientCAPath: caPath,
            requireClientCertificate: requireClientCertificate)
    }

    private func generate() throws {
        writeFile(passwordPath, Data((Self.password + "\n").utf8), permissions: 0o600)
        try write("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        try write("client.ext", "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n")
        try makeCA("ca", subject: "/CN=tokenvault-test-ca")
        try makeCA("foreign-ca", subject: "/CN=tokenvault-foreign-ca")
        try issue("server", subject: "/CN=127.0.0.1", by: "ca", extensions: "server.ext", serial: "2")
        try issue("client", subject: "/CN=vault-client", by: "ca", extensions: "client.ext", serial: "3")
        try issue(
            "foreign-client", subject: "/CN=vault-client", by: "foreign-ca", extensions: "client.ext", serial: "4")
        for name in ["client", "foreign-client"] {
            try openssl(
                "pkcs12", "-export", "-in", "\(name).pem", "-inkey", "\(name).key", "-out", "\(name).p12", "-passout",
                "file:p12.pass")
        }
    }

    private func makeCA(_ name: String, subject: String) throws {
        try openssl(
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            "\(name).key", "-out", "\(name).pem", "-days", "2", "-subj", subject)
    }

    private func issue(_ name: String, subject: String, by ca: String, extensions: String, serial: String) throws {
        try openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(name).key",
            "-out", "\(name).csr", "-subj", subject)
        try openssl(
            "x509", "-req", "-in", "\(name).csr", "-CA", "\(ca).pem", "-CAkey", "\(ca).key", "-set_serial", serial,
            "-days", "2", "-extfile", extensions, "-out", "\(name).pem")
    }

    private func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: directory.file(name)))
    }

    private func openssl(_ arguments: String...) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory.path)
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestPKIError(
                command: "openssl " + arguments.joined(separator: " "),
                stderr: String(decoding: message, as: UTF8.self))
        }
    }
}

public struct TestPKIError: Error, CustomStringConvertible {
    public var command: String
    public var stderr: String
    public var description: String { "\(command) failed: \(stderr)" }
}
