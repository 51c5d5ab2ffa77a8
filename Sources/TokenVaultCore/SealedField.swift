/// The secret columns of a credential row. The raw value is bound into the associated data,
/// so a ciphertext moved from one field to another fails to open.
public enum SealedField: String, Sendable, CaseIterable {
    case accessToken = "access_token"
    case refreshToken = "refresh_token"
    case idToken = "id_token"
    case extras

    /// Associated data for this field of `id` at `generation`:
    /// `tokenvault.credential.v1 NUL id NUL generation NUL field`.
    /// A ciphertext copied to another row, field or generation no longer authenticates.
    public func associatedData(id: CredentialID, generation: Int64) -> [UInt8] {
        var data = Array("tokenvault.credential.v1".utf8)
        for part in [id.description, String(generation), rawValue] {
            data.append(0)
            data.append(contentsOf: part.utf8)
        }
        return data
    }
}
