/// Opens every sealed field of every credential and reports what failed, by id and field,
/// without printing any secret. Backs `tokenvault verify`.
public struct VaultVerification: Sendable {
    public struct Report: Sendable, Equatable {
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

    public let vault: Vault

    public init(vault: Vault) { self.vault = vault }

    public func run(batchSize: Int = 500) throws -> Report {
        var report = Report()
        var after: CredentialID?
        while true {
            let batch = try vault.store.records(after: after, limit: batchSize)
            guard let last = batch.last else { break }
            for record in batch {
                report.credentials += 1
                report.sealedFields += SealedField.allCases.filter { record[$0] != nil }.count
                do {
                    _ = try vault.open(record)
                } catch let error as VaultError {
                    report.failures.append(error.message)
                }
            }
            after = last.metadata.id
        }
        return report
    }
}
