import Testing
import TokenVaultCore

/// `AuditQuery.includes`, the rule stores kept in memory follow (the SQL backends spell it in
/// their queries, checked by `StorageContractTests`).
@Suite struct AuditQueryTests {
    @Test func aCursorExcludesItselfAndEverythingOnTheOtherSide() throws {
        let newest = AuditQuery(.newestFirst, cursor: 10, limit: 5)
        #expect(newest.includes(id: 9, credentialID: nil) && !newest.includes(id: 10, credentialID: nil))
        #expect(!newest.includes(id: 11, credentialID: nil))
        let oldest = AuditQuery(.oldestFirst, cursor: 10, limit: 5)
        #expect(oldest.includes(id: 11, credentialID: nil) && !oldest.includes(id: 10, credentialID: nil))
        #expect(!oldest.includes(id: 9, credentialID: nil))
        #expect(AuditQuery(.newestFirst, limit: 5).includes(id: .max, credentialID: nil))
    }

    @Test func aCredentialFilterKeepsOnlyThatCredentialsRows() throws {
        let a = try CredentialID("pay/a")
        let page = AuditQuery(.newestFirst, credentialID: a, limit: 5)
        #expect(page.includes(id: 1, credentialID: a))
        #expect(!page.includes(id: 1, credentialID: try CredentialID("pay/b")))
        #expect(!page.includes(id: 1, credentialID: nil))
    }
}
