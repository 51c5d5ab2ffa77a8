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

    /// `audience` and `resource` as OAuth requests take them: a string or an array of strings, at
    /// most 16 values of 1-2048 bytes.
    func targets(_ name: String) throws -> [String] {
        let values: [String]
        switch fields[name] {
        case .string(let single)?: values = [single]
        case nil, .null?, .array?: values = try strings(name, maximum: 2048)
        case let other?:
            throw VaultError.invalidField(name, "expected a string or an array of strings, got \(other.typeName)")
        }
        guard values.count <= 16, values.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 2048 }) else {
            throw VaultError.invalidField(name, "at most 16 values of 1-2048 bytes")
        }
        return values
    }

    /// Scopes as a request sends them, joined by spaces: at most 64, each non-empty and without one.
    func scopes(_ name: String) throws -> [String] {
        let scopes = try strings(name, maximum: 256)
        guard scopes.count <= 64, scopes.allSatisfy({ !$0.isEmpty && !$0.contains(" ") }) else {
            throw VaultError.invalidField(name, "at most 64 scopes, each non-empty and without spaces")
        }
        return scopes
    }
}
