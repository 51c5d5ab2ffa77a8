import Testing
import TokenVaultCore

@Suite struct CredentialIDTests {
    @Test(arguments: ["payments/alice", "a/b", "ns-1/user.name_2", "NS/Name"])
    func acceptsValidIDs(_ text: String) throws {
        #expect(try CredentialID(text).description == text)
    }

    @Test(arguments: [
        ("noslash", "namespace/name"), ("/name", "namespace is empty"), ("ns/", "name is empty"),
        ("ns/a/b", "may contain only"), ("ns/.hidden", "must not start"), ("-ns/x", "must not start"),
        ("ns/white space", "may contain only"), ("ns/ü", "may contain only"),
        (String(repeating: "n", count: 65) + "/x", "at most 64"),
        ("ns/" + String(repeating: "x", count: 129), "at most 128"),
    ])
    func rejectsInvalidIDs(_ text: String, _ reason: String) {
        #expect {
            _ = try CredentialID(text)
        } throws: { error in
            let error = error as! VaultError
            return error.code == .invalidCredentialID && error.message.contains(reason)
        }
    }
}
