import NIOSSL

/// HTTPS for `TestOAuthServer` (`Options.tls`), with optional client certificates, so a
/// provider that needs mutual TLS (Sber ID) is tested over a real handshake. Read when the
/// server starts; `update` cannot change it.
public struct TestServerTLS: Sendable {
    /// PEM files of the server's certificate (chain) and private key.
    public var certificatePath: String
    public var privateKeyPath: String
    /// PEM bundle client certificates must chain to; nil: client certificates are not asked for.
    public var trustedClientCAPath: String?
    /// Refuse the handshake without a client certificate (with `trustedClientCAPath`; without
    /// it a presented certificate is still verified, but none is accepted).
    public var requireClientCertificate: Bool

    public init(
        certificatePath: String, privateKeyPath: String, trustedClientCAPath: String? = nil,
        requireClientCertificate: Bool = true
    ) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
        self.trustedClientCAPath = trustedClientCAPath
        self.requireClientCertificate = requireClientCertificate
    }

    /// The server side's TLS context.
    func makeContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificatePath).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: privateKeyPath, format: .pem)))
        if let trustedClientCAPath {
            configuration.trustRoots = .file(trustedClientCAPath)
            configuration.certificateVerification =
                requireClientCertificate ? .noHostnameVerification : .optionalVerification
            configuration.sendCANameList = true
        }
        return try NIOSSLContext(configuration: configuration)
    }
}
