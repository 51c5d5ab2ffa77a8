import Testing
import TokenVaultCore

/// The associated data every sealed field is bound to, byte for byte: rows sealed by every
/// earlier version open only while it stays exactly `label NUL id NUL generation NUL field`.
@Suite struct SealedFieldTests {
    @Test func theAssociatedDataIsTheFormatRowsWereSealedWith() throws {
        let id = try CredentialID("pay/alice")
        #expect(
            SealedField.accessToken.associatedData(id: id, generation: 42)
                == Array("tokenvault.credential.v1\0pay/alice\042\0access_token".utf8))
        var generator = SystemRandomNumberGenerator()
        for field in SealedField.allCases {
            for _ in 0..<50 {
                let id = try CredentialID(
                    namespace: "ns\(Int.random(in: 0...999, using: &generator))",
                    name: String(repeating: "n", count: Int.random(in: 1...128, using: &generator)))
                let generation = Int64.random(in: 1...Int64.max, using: &generator)
                var expected = Array("tokenvault.credential.v1".utf8)
                for part in [id.description, String(generation), field.rawValue] {
                    expected.append(0)
                    expected.append(contentsOf: part.utf8)
                }
                #expect(field.associatedData(id: id, generation: generation) == expected)
            }
        }
    }
}
