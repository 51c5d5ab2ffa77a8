/// The secret columns of a credential row. The raw value is bound into the associated data,
/// so a ciphertext moved from one field to another fails to open.
public enum SealedField: String, Sendable, CaseIterable {
    case accessToken = "access_token"
    case refreshToken = "refresh_token"
    case idToken = "id_token"
    case extras

    /// What a token read returns, so all it opens: built once, as every read asks for it.
    public static let served: Set<SealedField> = [.accessToken, .idToken]

    /// Associated data for this field of `id` at `generation`:
    /// `tokenvault.credential.v1 NUL id NUL generation NUL field`.
    /// A ciphertext copied to another row, field or generation no longer authenticates.
    /// Built in one allocation: every token read opens a field (the id's text and an array of
    /// the parts were made for each).
    public func associatedData(id: CredentialID, generation: Int64) -> [UInt8] {
        let label: StaticString = "tokenvault.credential.v1"
        let number = String(generation)
        var data: [UInt8] = []
        data.reserveCapacity(
            label.utf8CodeUnitCount + id.namespace.utf8.count + id.name.utf8.count + number.utf8.count
                + rawValue.utf8.count + 4)
        data.append(contentsOf: UnsafeBufferPointer(start: label.utf8Start, count: label.utf8CodeUnitCount))
        data.append(0)
        data.append(contentsOf: id.namespace.utf8)
        data.append(UInt8(ascii: "/"))
        data.append(contentsOf: id.name.utf8)
        data.append(0)
        data.append(contentsOf: number.utf8)
        data.append(0)
        data.append(contentsOf: rawValue.utf8)
        return data
    }
}
