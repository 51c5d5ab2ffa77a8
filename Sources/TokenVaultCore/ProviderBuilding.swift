/// Turns the `providers` section into provider objects, at start-up and at every reload, in one
/// place (TokenVaultProviders' `ProviderInstances`), so the server's reload does not repeat the
/// kinds' rules and start-up and reload build instances the same way.
public protocol ProviderBuilding: Sendable {
    /// The table for `settings`, the one after `previous`: a provider for every instance that has
    /// endpoints, `previous`'s object of an instance whose endpoints, secrets and transport did
    /// not change, a new one otherwise. If one instance cannot be built, nothing built here stays
    /// and the error names its key.
    func build(_ settings: [String: ProviderSettings], after previous: ProviderTable)
        async throws(ProviderConfigurationError)
        -> ProviderTable
    /// Releases providers nobody calls any more (their HTTP clients, the courier's transports).
    func release(_ providers: [any TokenProvider]) async
}

/// Where provider tables are put in force (the refresh engine): its providers and their gates,
/// and the vault's table, in one step.
public protocol ProviderRouting: Sendable {
    /// The table in force (what the next build starts from).
    var providerTable: ProviderTable { get }
    /// Puts `table` in force for the next call and request. Calls already running finish on the
    /// objects (and planners) they started with.
    func install(_ table: ProviderTable) -> ProviderReplacement
}

/// What a replacement changed, and the provider objects it took out of use.
public struct ProviderReplacement: Sendable {
    /// Instance names, sorted: new ones, ones gone, ones given new endpoints or secrets, ones
    /// whose limits alone changed (their gate was retuned, its breaker and bucket kept).
    public var added: [String] = []
    public var removed: [String] = []
    public var repointed: [String] = []
    public var retuned: [String] = []
    /// Waits until no call uses the replaced objects any more, then returns them (to be released).
    public var retired: @Sendable () async -> [any TokenProvider]

    public init(retired: @escaping @Sendable () async -> [any TokenProvider] = { [] }) {
        self.retired = retired
    }
}

extension TokenProvider {
    /// Whether `other` is this very object: a kept instance, not a rebuilt one (a value type
    /// never is, so it always counts as replaced).
    public func isSameObject(as other: any TokenProvider) -> Bool {
        guard Self.self is AnyObject.Type else { return false }
        return (self as AnyObject) === (other as AnyObject)
    }
}
