import TokenVaultCore

/// One provider instance as the engine calls it: its provider object (nil for an instance
/// without endpoints), its gate, and the calls using the object. A reload replaces slots; the
/// calls that took a replaced slot finish on it, and its provider object is released only once
/// no call uses it through any slot (`use`, shared by every slot holding the same object).
final class ProviderSlot: Sendable {
    let settings: ProviderSettings
    let provider: (any TokenProvider)?
    /// The planner of the table this slot was made from (nil for a name without settings: the
    /// vault's default). What the call's answer is planned with, whatever table is in force by
    /// the time it commits.
    let planner: RefreshPlanner?
    let gate: ProviderGate
    /// The calls on `provider`, counted across every slot that holds it.
    let use: ProviderUse

    init(
        settings: ProviderSettings, provider: (any TokenProvider)?, planner: RefreshPlanner?, gate: ProviderGate,
        use: ProviderUse
    ) {
        self.settings = settings
        self.provider = provider
        self.planner = planner
        self.gate = gate
        self.use = use
    }

    /// A call takes the slot (under the engine's table lock, so a replacement sees it).
    func enter() { use.enter() }

    func leave() { use.leave() }

    /// Whether `other` holds the very same provider object (or both hold none).
    func holdsSameProvider(as other: (any TokenProvider)?) -> Bool {
        switch (provider, other) {
        case (nil, nil): true
        case (let mine?, let other?): mine.isSameObject(as: other)
        default: false
        }
    }
}
