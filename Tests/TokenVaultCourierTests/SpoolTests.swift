import Foundation
import Testing
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultProviders
import TokenVaultTesting

@testable import TokenVaultCourier

/// The spool's files: what the courier seals opens with the vault's keyring and reads back
/// whole; a torn, foreign, renamed or altered file is refused, naming what is wrong.
@Suite struct SpoolTests {
    let fixture: TestVault
    let spool: Spool

    init() throws {
        fixture = try TestVault()
        spool = Spool(directory: fixture.directory.file("spool"))
    }

    static let answer = CallResult.answer(
        HTTPAnswer(
            status: 200, headers: ["content-type": "application/json", "retry-after": "5"],
            body: Array(#"{"access_token":"at-secret","refresh_token":"rt-secret","expires_in":3600}"#.utf8)))

    func write(_ key: String, _ result: CallResult = Self.answer, context: String? = "ctx") throws {
        try spool.write(
            Spool.Entry(
                key: key, context: context.map { SecretBytes(utf8: $0) },
                sentAt: Timestamp(milliseconds: 1_795_000_000_123),
                result: result),
            publicKey: try #require(fixture.keyring.spoolPublicKey))
    }

    func read(_ file: String) throws(Spool.Refusal) -> Spool.Entry {
        try spool.read(file) { try fixture.keyring.openSpooled($0) }
    }

    @Test func aSpooledAnswerReadsBackWhole() throws {
        try write("refresh:attempt-1")
        let failure = ProviderFailure(
            kind: .unknownOutcome, code: "timeout", message: "no answer", retryAfter: 2.5, httpStatus: nil)
        try write("exchange:x", .failure(failure), context: nil)
        #expect(spool.files().count == 2)
        let entry = try read(Spool.fileName(for: "refresh:attempt-1"))
        #expect(entry.key == "refresh:attempt-1")
        #expect(entry.context.map { String(decoding: $0.withUnsafeBytes { Array($0) }, as: UTF8.self) } == "ctx")
        #expect(entry.sentAt == Timestamp(milliseconds: 1_795_000_000_123))
        #expect(entry.result == Self.answer)
        #expect(try read(Spool.fileName(for: "exchange:x")).result == .failure(failure))
    }

    @Test func theFileHoldsNoTokenInTheClear() throws {
        try write("refresh:attempt-1")
        let bytes = RawBytes.read(spool.directory + "/" + Spool.fileName(for: "refresh:attempt-1"))
        #expect(!bytes.isEmpty)
        #expect(!RawBytes.contains(bytes, "rt-secret".utf8))
        #expect(!RawBytes.contains(bytes, "at-secret".utf8))
        #expect(!RawBytes.contains(bytes, "refresh:attempt-1".utf8), "not even the key")
        let mode =
            try FileManager.default.attributesOfItem(
                atPath: spool.directory + "/" + Spool.fileName(for: "refresh:attempt-1"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func aTornFileIsRefused() throws {
        try write("refresh:attempt-1")
        let path = spool.directory + "/" + Spool.fileName(for: "refresh:attempt-1")
        let bytes = RawBytes.read(path)
        writeFile(path, Data(bytes.prefix(bytes.count - 7)))
        #expect(throws: Spool.Refusal.self) { try read(Spool.fileName(for: "refresh:attempt-1")) }
        do throws(Spool.Refusal) {
            _ = try read(Spool.fileName(for: "refresh:attempt-1"))
        } catch {
            #expect(error.description.contains("is torn"), "\(error)")
        }
        writeFile(path, Data("garbage".utf8))
        do throws(Spool.Refusal) {
            _ = try read(Spool.fileName(for: "refresh:attempt-1"))
            Issue.record("garbage was read")
        } catch {
            #expect(error.description.contains("is not a TokenVault spool file"), "\(error)")
        }
    }

    @Test func aFileSealedForAnotherVaultIsRefused() throws {
        let other = try TestVault()
        try spool.write(
            Spool.Entry(key: "refresh:a", context: nil, sentAt: .now(), result: Self.answer),
            publicKey: try #require(other.keyring.spoolPublicKey))
        do throws(Spool.Refusal) {
            _ = try read(Spool.fileName(for: "refresh:a"))
            Issue.record("a foreign file was opened")
        } catch {
            #expect(error.description.contains("was not sealed for this vault"), "\(error)")
        }
    }

    @Test func aRenamedOrAlteredFileIsRefused() throws {
        try write("refresh:a")
        let directory = spool.directory
        try FileManager.default.moveItem(
            atPath: directory + "/" + Spool.fileName(for: "refresh:a"),
            toPath: directory + "/" + Spool.fileName(for: "refresh:b"))
        do throws(Spool.Refusal) {
            _ = try read(Spool.fileName(for: "refresh:b"))
            Issue.record("a renamed file was used")
        } catch {
            #expect(error.description.contains("renamed"), "\(error)")
        }
        let path = directory + "/" + Spool.fileName(for: "refresh:b")
        var bytes = RawBytes.read(path)
        bytes[bytes.count - 3] ^= 1
        writeFile(path, Data(bytes))
        do throws(Spool.Refusal) {
            _ = try read(Spool.fileName(for: "refresh:b"))
            Issue.record("an altered file was opened")
        } catch {
            #expect(error.description.contains("does not open"), "\(error)")
        }
    }

    @Test func removalIsDurableAndIdempotent() throws {
        try write("refresh:a")
        try spool.remove("refresh:a")
        try spool.remove("refresh:a")
        #expect(spool.files().isEmpty)
    }

    /// Rekey re-wraps the spool key: what was spooled before still opens.
    @Test func spooledAnswersSurviveARekey() throws {
        try write("refresh:a")
        let newKey = SodiumRandom.secret(count: 32)
        try fixture.keyring.rekey(to: newKey, settings: [:])
        let (_, keyring) = try fixture.reopen(masterKey: newKey)
        #expect(try spool.read(Spool.fileName(for: "refresh:a")) { try keyring.openSpooled($0) }.key == "refresh:a")
    }
}

/// Every message survives the trip through the framing, and malformed bytes are refused.
@Suite struct CourierMessageTests {
    @Test func messagesRoundTrip() throws {
        let request = PreparedRequest(
            method: "POST", url: "https://id.example/token",
            headers: [HeaderField(name: "Content-Type", value: "application/x-www-form-urlencoded")],
            body: Array("grant_type=refresh_token&refresh_token=rt".utf8))
        let messages: [CourierMessage] = [
            .hello(
                .init(
                    spoolPublicKey: Array(repeating: 7, count: 32), version: 3,
                    instances: [
                        .init(route: 1, name: "idp", kind: "oauth2", concurrency: 8, options: Array("{}".utf8))
                    ])),
            .ready(pid: 4242),
            .call(
                .init(
                    id: 9, key: "refresh:a", context: SecretBytes(utf8: "c"), route: 1, instance: "idp",
                    request: request)),
            .call(.init(id: 10, key: nil, context: nil, route: 2, instance: "idp", request: request)),
            .instances(
                id: 11, version: 4,
                [
                    .init(route: 1, name: "idp", kind: "oauth2", concurrency: 8, options: Array("{}".utf8)),
                    .init(route: 3, name: "new", kind: "tinkoff-id", concurrency: 2, options: Array("{}".utf8)),
                ]),
            .instances(id: 12, version: 5, []),
            .instancesReady(id: 11, unavailable: []),
            .instancesReady(
                id: 12,
                unavailable: [ProviderConfigurationError(key: "providers.new.ca_file", problem: "cannot be read")]),
            .answer(id: 9, SpoolTests.answer),
            .answer(
                id: 10, .failure(ProviderFailure(kind: .transient, code: "http_503", message: "down", retryAfter: 3))),
            .settle(key: "refresh:a"),
        ]
        for message in messages {
            let again = try CourierMessage.decode(message.encoded())
            #expect(again.encoded() == message.encoded())
        }
    }

    /// A reload's instance set, field by field: the route a call names picks the transport.
    @Test func instancesCarryTheirRoutes() throws {
        let sent = CourierMessage.instances(
            id: 7, version: 9,
            [.init(route: 42, name: "acme", kind: "oauth2", concurrency: 3, options: Array(#"{"a":1}"#.utf8))])
        guard case .instances(let id, let version, let instances) = try CourierMessage.decode(sent.encoded()) else {
            Issue.record("not an instances message")
            return
        }
        #expect(id == 7 && version == 9)
        #expect(
            instances == [
                .init(route: 42, name: "acme", kind: "oauth2", concurrency: 3, options: Array(#"{"a":1}"#.utf8))
            ])
        guard
            case .instancesReady(let answered, let unavailable) = try CourierMessage.decode(
                CourierMessage.instancesReady(
                    id: 7, unavailable: [ProviderConfigurationError(key: "providers.acme.ca_file", problem: "missing")]
                ).encoded())
        else {
            Issue.record("not an instancesReady message")
            return
        }
        #expect(
            answered == 7
                && unavailable == [ProviderConfigurationError(key: "providers.acme.ca_file", problem: "missing")])
        // A set cut short is refused, not read as fewer instances.
        #expect(throws: (any Error).self) { try CourierMessage.decode(Array(sent.encoded().dropLast(3))) }
    }

    @Test func malformedBytesAreRefused() {
        let good = CourierMessage.settle(key: "refresh:a").encoded()
        for bad in [[], [99], Array(good.dropLast()), good + [0], [1, 0, 0, 0, 200]] {
            #expect(throws: (any Error).self) { try CourierMessage.decode(bad) }
        }
    }
}
