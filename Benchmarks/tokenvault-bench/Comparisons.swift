import BenchmarkSupport
import TokenVaultCore
import TokenVaultCrypto

/// Our wrapper next to the raw reference for the same work, measured in the same run.
struct Comparison {
    /// Our wrappers should cost at most this many times the raw reference.
    static let goalRatio = 1.5

    let number: Int
    let title: String
    let ours: Measurement
    /// Shown with a ratio for context but not judged (the read without its decrypt).
    let context: [Measurement]
    /// The like-for-like reference the goal is judged against.
    let reference: Measurement

    func ratio(to reference: Measurement) -> Double { ours.median / reference.median }
    var ratio: Double { ratio(to: reference) }
    var meetsGoal: Bool { ratio <= Self.goalRatio }
}

/// The associated data our envelopes authenticate for a credential's access token: the 5-byte
/// envelope header (version 1, term 1) followed by the field context. The raw references
/// authenticate exactly these bytes.
struct AssociatedData {
    /// What callers pass to `Envelope` (it prepends the header itself).
    let context: [UInt8]
    /// What the raw AEAD authenticates: header + context.
    var withHeader: [UInt8] { [Envelope.version, 0, 0, 0, 1] + context }

    init() throws {
        let id = try CredentialID(namespace: "bench", name: "credential-0")
        context = SealedField.accessToken.associatedData(id: id, generation: 1)
    }
}

/// Benchmark 1: seal and open one 2 KiB secret.
/// Ours: `Envelope.seal` + `Envelope.open`. Raw: `crypto_aead_xchacha20poly1305_ietf_encrypt`
/// + `_decrypt` on preallocated buffers (fresh random nonce, same associated data).
func compareSealOpen(_ options: BenchmarkOptions, _ harness: inout Harness) throws -> Comparison {
    let associatedData = try AssociatedData()
    let context = associatedData.context
    let key = SodiumRandom.secret(count: XChaCha20Poly1305.keySize)
    let secret = SodiumRandom.secret(count: BenchmarkOptions.secretSize)
    let roundTrip = try Envelope.open(
        Envelope.seal(secret, key: key, term: 1, associatedData: context), key: key, associatedData: context)
    guard roundTrip == secret else { throw BenchmarkError("Envelope round trip changed the secret") }
    let raw = RawAEAD(messageSize: BenchmarkOptions.secretSize, associatedData: associatedData.withHeader)

    let ours = Workload(label: "ours: Envelope.seal + Envelope.open", iterations: options.sealOpenIterations) { _ in
        let envelope = Envelope.seal(secret, key: key, term: 1, associatedData: context)
        return try Envelope.open(envelope, key: key, associatedData: context).count
    }
    let reference = Workload(label: "raw:  libsodium encrypt + decrypt", iterations: options.rawSealOpenIterations) {
        _ in raw.sealAndOpen()
    }
    let measured = try harness.measure([ours, reference])
    return Comparison(number: 1, title: "seal + open", ours: measured[0], context: [], reference: measured[1])
}

/// Benchmark 2: point read by id with decrypt, rows visited in a fixed shuffled order.
/// Ours: `Vault.credentialWithoutWaiting(id)`, the synchronous read the event loop serves tokens
/// with (the row cache, else a reader that does not wait for a lock). Raw: a prepared `SELECT value ... WHERE id = ?` (context),
/// and the same read with the blob opened in place by raw libsodium (the goal reference).
func comparePointRead(
    _ vault: VaultFixture, _ raw: RawFixture, _ options: BenchmarkOptions, _ harness: inout Harness
) throws -> Comparison {
    let order = accessOrder(count: vault.ids.count)
    try vault.check(vault.ids[order[0]])
    try raw.check(order[0])

    let ours = Workload(label: "ours: Vault.credentialWithoutWaiting(id)", iterations: options.vaultReadIterations) {
        index in
        try vault.vault.credentialWithoutWaiting(
            vault.ids[order[index % order.count]], opening: Set(SealedField.allCases)
        )
        .secrets.accessToken.count
    }
    let rawRead = Workload(label: "raw:  SQLite point read", iterations: options.rawReadIterations) { index in
        try raw.table.withValue(raw.ids[order[index % order.count]]) { $0.count }
    }
    let rawReadOpen = Workload(
        label: "raw:  SQLite point read + libsodium open", iterations: options.rawReadOpenIterations
    ) { index in
        try raw.table.withValue(raw.ids[order[index % order.count]]) { raw.aead.open(envelope: $0) }
    }
    let measured = try harness.measure([ours, rawRead, rawReadOpen])
    return Comparison(
        number: 2, title: "point read by id + decrypt", ours: measured[0], context: [measured[1]],
        reference: measured[2])
}

/// Benchmark 3: durable (synchronous=FULL) replacement of one existing credential's tokens,
/// one transaction per operation, rows visited in a fixed shuffled order.
/// Ours: `Vault.put` of an existing id. Raw: BEGIN IMMEDIATE; INSERT OR REPLACE of an
/// envelope-sized blob; COMMIT.
func compareDurableUpdate(
    _ vault: VaultFixture, _ raw: RawFixture, _ options: BenchmarkOptions, _ harness: inout Harness
) throws -> Comparison {
    let order = accessOrder(count: vault.ids.count)
    // New tokens are made up front so the timing is the vault's work, not payload creation.
    let payloads = (0..<16).map { _ in VaultFixture.payload() }
    let values = (0..<16).map { _ in raw.aead.envelope() }

    let ledger = vault.vault
    let ours = Workload(label: "ours: Vault.put (existing id, FULL)", iterations: options.vaultPutIterations) {
        index in
        let id = vault.ids[order[index % order.count]]
        let payload = payloads[index % payloads.count]
        let stored = try runBlocking { try await ledger.put(id, payload: payload, provider: VaultFixture.provider) }
        return Int(stored.generation)
    }
    let reference = Workload(
        label: "raw:  INSERT OR REPLACE, FULL, 1 txn/op", iterations: options.rawReplaceIterations
    ) { index in
        try raw.table.replaceDurably(raw.ids[order[index % order.count]], values[index % values.count])
        return 1
    }
    let measured = try harness.measure([ours, reference])
    return Comparison(
        number: 3, title: "durable single-credential update", ours: measured[0], context: [],
        reference: measured[1])
}
