import Foundation
import TokenVaultCore
import TokenVaultCrypto
import TokenVaultLedger
import TokenVaultStorage

/// A real vault on a real SQLite file in a temporary directory, for integration tests.
public struct TestVault: Sendable {
    public let directory: TemporaryDirectory
    public let database: SQLiteDatabase
    public let keyring: Keyring
    public let vault: Vault
    public let masterKey: SecretBytes
    public let clock: FakeClock

    public var databasePath: String { database.path }

    /// `busyTimeoutMilliseconds`: how long a write waits for another connection's lock (tests
    /// that hold one on purpose use a short wait).
    public init(
        directory: TemporaryDirectory = TemporaryDirectory(), masterKey: SecretBytes? = nil,
        busyTimeoutMilliseconds: Int32 = 5000
    ) throws {
        self.directory = directory
        clock = FakeClock(Timestamp.now())
        self.masterKey = masterKey ?? SodiumRandom.secret(count: 32)
        database = try SQLiteDatabase(
            path: directory.file("vault.db"), checksum: SHA256.hex, clock: clock,
            busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        try database.migrate()
        keyring = try Keyring.bootstrap(masterKey: self.masterKey, store: database, clock: clock)
        vault = Vault(store: database, sealer: keyring, clock: clock)
    }

    /// Reopens the same file with another master key (as a restarted process would).
    public func reopen(masterKey: SecretBytes) throws -> (SQLiteDatabase, Keyring) {
        let database = try SQLiteDatabase(path: databasePath, checksum: SHA256.hex, clock: clock)
        return (database, try Keyring(masterKey: masterKey, store: database, clock: clock))
    }
}

/// Token payloads for tests. Each token carries a unique marker so raw-byte scans can find leaks.
public enum SamplePayloads {
    public static func tinkoff(_ marker: String = UUID().uuidString) -> (json: String, tokens: [String]) {
        let access = "t.access-\(marker)"
        let refresh = "refresh-\(marker)"
        let json = """
            {"accessToken": "\(access)", "refreshToken": "\(refresh)", "expirationTimeout": 1800}
            """
        return (json, [access, refresh])
    }

    public static func oauth(_ marker: String = UUID().uuidString) -> (json: String, tokens: [String]) {
        let access = "at-\(marker)"
        let refresh = "rt-\(marker)"
        let idToken = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1c2VyLTEifQ.sig-\(marker)"
        let json = """
            {"access_token": "\(access)", "token_type": "bearer", "expires_in": "3600", "refresh_token": "\(refresh)",
             "id_token": "\(idToken)", "scope": ["openid", "profile"], "session_state": "extra-\(marker)"}
            """
        return (json, [access, refresh, idToken, "extra-\(marker)"])
    }

    public static func ebs(_ marker: String = UUID().uuidString) -> (json: String, tokens: [String]) {
        let verify = "verify-\(marker)"
        return ("{\"verify_token\": \"\(verify)\", \"expired\": \"600\"}", [verify])
    }

    public static func decode(_ json: String) throws -> TokenPayload {
        try TokenPayloadDecoder().decode(Array(json.utf8))
    }
}
