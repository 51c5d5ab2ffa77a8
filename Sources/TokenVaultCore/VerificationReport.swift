/// What `Vault.verify` found.
public struct VerificationReport: Sendable, Equatable {
    public var credentials = 0
    public var sealedFields = 0
    public var failures: [String] = []
    public var isClean: Bool { failures.isEmpty }

    public init(credentials: Int = 0, sealedFields: Int = 0, failures: [String] = []) {
        self.credentials = credentials
        self.sealedFields = sealedFields
        self.failures = failures
    }
}
