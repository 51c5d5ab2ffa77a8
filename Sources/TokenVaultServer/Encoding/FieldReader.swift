import TokenVaultCore

/// Reads the members of a request body by type, naming the member that is wrong.
struct FieldReader {
    let fields: [String: JSONValue]

    func string(_ name: String, required: Bool, maximum: Int) throws -> String? {
        switch fields[name] {
        case nil, .null?:
            if required { throw VaultError.invalidField(name, "is required") }
            return nil
        case .string(let text)?:
            guard !text.isEmpty, text.utf8.count <= maximum else {
                throw VaultError.invalidField(name, "must be 1-\(maximum) bytes")
            }
            return text
        case let other?:
            throw VaultError.invalidField(name, "expected a string, got \(other.typeName)")
        }
    }

    /// An array of strings, each at most `maximum` bytes; empty when absent.
    func strings(_ name: String, maximum: Int) throws -> [String] {
        switch fields[name] {
        case nil, .null?: return []
        case .array(let items)?:
            return try items.map { item in
                guard case .string(let text) = item, text.utf8.count <= maximum else {
                    throw VaultError.invalidField(name, "must be an array of strings of at most \(maximum) bytes")
                }
                return text
            }
        case let other?: throw VaultError.invalidField(name, "expected an array of strings, got \(other.typeName)")
        }
    }
}
