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
            return error.code == .wrongMasterKey && error.message.contains("wrong key file or passphrase")
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
        try keyring.rekey(to: newMaster, settings: [:])
        #expect(throws: VaultError.self) { _ = try Keyring(masterKey: master, store: store) }
        let reopened = try Keyring(masterKey: newMaster, store: store)
        #expect(try reopened.open(sealed, associatedData: ad).revealString() == "kept")
    }

    @Test func wrappedTermMovedToAnotherTermNumberFails() throws {
        _ = try Keyring.bootstrap(masterKey: master, store: store)
        var terms = try store.terms()
        terms[0].term = 5
        let moved = InMemoryStore()
        try moved.addActiveTerm(terms[0], keyCheck: KeyedHash.keyCheckValue(master))
        #expect(throws: VaultError.self) { _ = try Keyring(masterKey: master, store: moved) }
    }

    /// A process that opened the vault before a rekey holds the old master key: a term it wrapped
    /// now could be opened by nobody else, so the key check value stops it before anything is written.
    @Test func aKeyringWithAReplacedMasterKeyCannotAddATerm() throws {
        let daemon = try Keyring.bootstrap(masterKey: master, store: store)
        let operator_ = try Keyring(masterKey: master, store: store)
        try operator_.rekey(to: SodiumRandom.secret(count: 32), settings: [:])
        let terms = try store.terms()
        #expect {
            _ = try daemon.addTerm()
        } throws: { error in
            (error as? VaultError)?.code == .wrongMasterKey
                && (error as? VaultError)?.message.contains("no longer the vault's") == true
        }
        #expect(try store.terms() == terms)
    }

    /// The check value is a keyed hash: the same key gives the same value, another key another,
    /// and it is not the key.
    @Test func keyCheckValueIdentifiesTheKeyWithoutRevealingIt() {
        let value = KeyedHash.keyCheckValue(master)
        #expect(value == KeyedHash.keyCheckValue(master))
        #expect(value != KeyedHash.keyCheckValue(SodiumRandom.secret(count: 32)))
        #expect(value.count == 32)
        #expect(!value.contains(master.revealBytes().map { String($0, radix: 16) }.joined()))
    }

    @Test func rekeyCoversEveryTermOrNothing() throws {
        let keyring = try Keyring.bootstrap(masterKey: master, store: store)
        _ = try keyring.addTerm()
        _ = try keyring.addTerm()
        let newMaster = SodiumRandom.secret(count: 32)
        try keyring.rekey(to: newMaster, settings: ["key.source": "file"])
        let reopened = try Keyring(masterKey: newMaster, store: store)
        #expect(reopened.knownTerms == [1, 2, 3])
        #expect(try store.setting(VaultSetting.keyCheck) == KeyedHash.keyCheckValue(newMaster))
    }
}
