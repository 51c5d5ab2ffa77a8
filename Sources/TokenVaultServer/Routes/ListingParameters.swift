import TokenVaultCore

/// The listing's query parameters (`namespace`, `status`, `limit`, `cursor`), checked by one
/// rule whether the router reads them (`VaultAPI.listingQuery`) or the event loop does
/// (`FastTarget`).
struct ListingParameters: Equatable {
    /// Namespace, status, cursor and limit; never the caller's namespaces (`scoped(to:)`).
    private(set) var query = CredentialQuery()

    /// The parameters `value(name)` gives, each checked: a bad one throws the router's 400.
    init(_ value: (String) -> String?) throws {
        if let namespace = value("namespace") {
            try CredentialID.validateNamespace(namespace)
            query.namespace = namespace
        }
        if let status = value("status") {
            guard let parsed = CredentialStatus(rawValue: status), CredentialStatus.stored.contains(parsed) else {
                throw VaultError.invalidField(
                    "status",
                    "'\(status)' is not one of \(CredentialStatus.stored.map(\.rawValue).joined(separator: ", "))")
            }
            query.status = parsed
        }
        query.limit = try PageSize.parse(value("limit"))
        if let cursor = value("cursor") {
            guard let after = try? CredentialID(cursor) else {
                throw VaultError.invalidField("cursor", "must be the next_cursor of a previous page")
            }
            query.after = after
        }
    }

    /// What a caller who may list `visible` (nil: every namespace) is given.
    enum Scope: Equatable {
        /// The query over the namespaces it may list only (the namespace index).
        case query(CredentialQuery)
        /// Refused: the namespace asked for is not one of them (nil: it may list none).
        case denied(namespace: String?)
    }

    func scoped(to visible: Set<String>?) -> Scope {
        if let namespace = query.namespace, let visible, !visible.contains(namespace) {
            return .denied(namespace: namespace)
        }
        if visible?.isEmpty == true { return .denied(namespace: nil) }
        var query = query
        query.namespaces = visible
        return .query(query)
    }

    private static let path = Array(Route.list.template.utf8)
    private static let names = ["namespace", "status", "limit", "cursor"]

    /// `/v1/credentials` with plain parameters, from the request's bytes: each a known name, at
    /// most once, with no percent-encoding or `+` to decode (nor a `#`). Nil for anything else
    /// (the router reads it), and for a parameter the rule refuses (the router answers the 400).
    init?(target: UnsafeRawBufferPointer) {
        guard target.starts(with: Self.path) else { return nil }
        let rest = target[Self.path.count...]
        var values: [String: String] = [:]
        if let question = rest.first {
            guard question == UInt8(ascii: "?") else { return nil }
            for pair in rest.dropFirst().split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false) {
                guard let equals = pair.firstIndex(of: UInt8(ascii: "=")),
                    !pair.contains(where: {
                        $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#")
                    })
                else { return nil }
                let name = String(decoding: pair[..<equals], as: UTF8.self)
                guard Self.names.contains(name), values[name] == nil else { return nil }
                values[name] = String(decoding: pair[(equals + 1)...], as: UTF8.self)
            }
        }
        guard let parameters = try? Self({ values[$0] }) else { return nil }
        self = parameters
    }
}
