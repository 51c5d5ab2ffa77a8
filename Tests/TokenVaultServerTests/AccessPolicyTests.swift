import Testing
import TokenVaultServer

@Suite struct AccessPolicyTests {
    let policy = AccessPolicy(
        rules: [
            .init(subject: .user(1001), namespaces: ["payments"], permissions: [.tokenRead]),
            .init(
                subject: .group(2000), namespaces: ["payments", "crm"],
                permissions: [.credentialWrite, .credentialList]),
            .init(subject: .user(1003), namespaces: ["*"], permissions: [.credentialList]),
            .init(subject: .user(1004), namespaces: ["ops"], permissions: [.admin]),
        ], daemonUID: 500)

    @Test func defaultDeny() {
        #expect(!policy.allows(uid: 4242, groups: [4242], .tokenRead, in: "payments"))
        #expect(!policy.allows(uid: 1001, groups: [1001], .tokenRead, in: "crm"))
        #expect(!policy.allows(uid: 1001, groups: [1001], .credentialWrite, in: "payments"))
    }

    @Test func daemonUserAndRootAreAdmins() {
        for uid: UInt32 in [0, 500] {
            for permission in Permission.allCases {
                #expect(policy.allows(uid: uid, groups: [], permission, in: "anything"))
                #expect(policy.allows(uid: uid, groups: [], permission, in: nil))
            }
        }
        var strict = policy
        strict.rootIsAdmin = false
        #expect(!strict.allows(uid: 0, groups: [0], .tokenRead, in: "payments"))
    }

    @Test func userAndGroupRulesGrantOnlyTheirNamespaces() {
        #expect(policy.allows(uid: 1001, groups: [1001], .tokenRead, in: "payments"))
        #expect(policy.allows(uid: 7, groups: [7, 2000], .credentialWrite, in: "crm"))
        #expect(!policy.allows(uid: 7, groups: [7, 2000], .tokenRead, in: "crm"))
        #expect(!policy.allows(uid: 7, groups: [7, 2000], .credentialWrite, in: "other"))
    }

    @Test func wildcardAndAdminRules() {
        #expect(policy.allows(uid: 1003, groups: [], .credentialList, in: "anything"))
        #expect(policy.allows(uid: 1003, groups: [], .credentialList, in: nil))
        #expect(policy.allows(uid: 1004, groups: [], .tokenRead, in: "ops"))
        #expect(!policy.allows(uid: 1004, groups: [], .admin, in: nil), "admin in one namespace is not global admin")
    }

    @Test func visibleNamespaces() {
        #expect(policy.namespaces(uid: 7, groups: [2000], with: .credentialList) == ["payments", "crm"])
        #expect(policy.namespaces(uid: 1003, groups: [], with: .credentialList) == nil)
        #expect(policy.namespaces(uid: 4242, groups: [], with: .credentialList) == [])
    }
}
