import Testing
import TokenVaultCore

/// The one rule for a listing's `limit`: its bounds, its default, and that a credential query
/// without a limit asks for the same default.
@Suite struct PageSizeTests {
    @Test func withoutALimitAPageHoldsTheStandardCount() throws {
        #expect(try PageSize.parse(nil) == 100)
        #expect(CredentialQuery().limit == PageSize.standard)
    }

    @Test(arguments: ["1", "100", "500"])
    func aLimitWithinTheBoundsIsTaken(_ text: String) throws {
        #expect(try PageSize.parse(text) == Int(text))
    }

    @Test(arguments: ["0", "501", "-5", "abc", "", "1e3", " 5", "99999999999999999999999"])
    func aLimitOutsideTheBoundsIsRefusedNamingTheField(_ text: String) {
        #expect(throws: VaultError.invalidField("limit", "must be an integer 1-500")) {
            try PageSize.parse(text)
        }
    }
}
