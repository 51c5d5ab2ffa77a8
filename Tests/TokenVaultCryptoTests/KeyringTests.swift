import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultTesting

@Suite struct KeyringTests {
    let store = InMemoryStore()
    let master = SodiumRandom.secret(count: 32)
    let ad = Array("ad".utf8)

    @Test func bootstrapCreatesTermOneOnce() throws {
        let keyring = try Keyring.bootstrap(masterKey: master, store: store)
        _ = try Keyring.bootstrap(masterKey: master, store: store)
        #expect(keyring.activeTerm == 1)
        #expect(try store.terms().count == 1)
    }

    @Test func wrongMasterKeyIsAClearError() throws {
        _ = try Keyring.bootstrap(masterKey: master, store: store)
        #expect {
            _ = try Keyring(masterKey: SodiumRandom.secret(count: 32), store: store)
        } throws: { error in
            let error = error as! VaultError
            return error.code == "wrong_master_key" && error.message.contains("wrong key file or passphrase")
        }
    }

    @Test func oldTermsStillOpenAfterRotation() throws {
        let keyring = try Keyring.bootstrap(masterKey: master, store: store)
        let old = try keyring.seal(SecretBytes(utf8: "v1"), associatedData: ad, term: keyring.activeTerm)
        #expect(try keyring.addTerm() == 2)
        let new = try keyring.seal(SecretBytes(utf8: "v2"), associatedData: ad, term: keyring.activeTerm)
        #expect(try keyring.term(of: new) == 2)
        #expect(try keyring.open(old, associatedData: ad).revealString() == "v1")
        #expect(try keyring.open(new, associatedData: ad).revealString() == "v2")
    }

    @Test func anotherProcessesNewTermIsPickedUpOnDemand() throws {
        let first = try Keyring.bootstrap(masterKey: master, store: store)
        let second = try Keyring(masterKey: master, store: store)
        _ = try first.addTerm()
        let sealed = try first.seal(SecretBytes(utf8: "x"), associatedData: ad, term: 2)
        #expect(second.knownTerms == [1])
        #expect(try second.open(sealed, associatedData: ad).revealString() == "x")
        #expect(second.knownTerms == [1, 2])
    }

    @Test func unknownTermIsNamed() throws {
        let keyring = try Keyring.bootstrap(masterKey: master, store: store)
        var sealed = try keyring.seal(SecretBytes(utf8: "x"), associatedData: ad, term: 1)
        sealed[4] = 9
        #expect(throws: VaultError.unknownKeyTerm(9)) { _ = try keyring.open(sealed, associatedData: ad) }
    }

    @Test func rewrapChangesTheMasterKeyButNotTheDataKeys() throws {
        let keyring = try Keyring.bootstrap(masterKey: master, store: store)
        let sealed = try keyring.seal(SecretBytes(utf8: "kept"), associatedData: ad, term: 1)
        let newMaster = SodiumRandom.secret(count: 32)
        try store.rewrap(try keyring.rewrapped(under: newMaster), settings: [:])
        #expect(throws: VaultError.self) { _ = try Keyring(masterKey: master, store: store) }
        let reopened = try Keyring(masterKey: newMaster, store: store)
        #expect(try reopened.open(sealed, associatedData: ad).revealString() == "kept")
    }

    @Test func wrappedTermMovedToAnotherTermNumberFails() throws {
        _ = try Keyring.bootstrap(masterKey: master, store: store)
        var terms = try store.terms()
        terms[0].term = 5
        let moved = InMemoryStore()
        try moved.addActiveTerm(terms[0])
        #expect(throws: VaultError.self) { _ = try Keyring(masterKey: master, store: moved) }
    }
}
