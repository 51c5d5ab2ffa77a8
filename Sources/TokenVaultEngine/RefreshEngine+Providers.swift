import TokenVaultCore

/// A reload's provider table put in force: new instances get a gate, removed ones stop being
/// called (their credentials then fail as `provider_not_configured`), re-pointed ones get their new
/// provider object and a fresh gate, and one whose limits alone changed keeps its gate, retuned.
/// The engine's slots and the vault's table (which requests read) change in one step, under the
/// lock every call takes its slot under.
extension RefreshEngine: ProviderRouting {
    public var providerTable: ProviderTable { vault.providers }

    public func providerInstance(named name: String) -> (kind: String, provider: (any TokenProvider)?)? {
        let table = vault.providers
        guard let settings = table.settings[name] else { return nil }
        return (settings.kind, table.providers[name])
    }

    public func install(_ table: ProviderTable) -> ProviderReplacement {
        let made = slots.withLock { current in
            let made = Self.slots(for: table, replacing: current)
            current = made.slots
            vault.install(table)
            return made
        }
        for (gate, limits) in made.retunes { gate.update(limits) }
        // An object a kept slot still holds is not released; the others are, once no call uses
        // them through any slot (an older slot kept by a reload that changed only the planner
        // shares the count).
        let released = made.retired.filter { old in
            !made.slots.values.contains { $0.holdsSameProvider(as: old.provider) }
        }
        var replacement = ProviderReplacement {
            var providers: [any TokenProvider] = []
            for slot in released {
                guard let provider = slot.provider else { continue }
                await slot.use.whenIdle()
                providers.append(provider)
            }
            return providers
        }
        replacement.added = made.added
        replacement.removed = made.removed
        replacement.repointed = made.repointed
        replacement.retuned = made.retunes.map(\.0.name).sorted()
        return replacement
    }

    struct Slots {
        var slots: [String: ProviderSlot] = [:]
        var retired: [ProviderSlot] = []
        var added: [String] = []
        var removed: [String] = []
        var repointed: [String] = []
        var retunes: [(ProviderGate, ProviderLimits)] = []
    }

    /// The slots for `table`, reusing what `current` has where it can. A name-only instance
    /// (settings without a provider) gets a slot too, so health lists it; a provider without
    /// settings gets the default limits.
    static func slots(for table: ProviderTable, replacing current: [String: ProviderSlot]) -> Slots {
        var made = Slots()
        for name in table.names.sorted() {
            let setting = table.settings[name] ?? ProviderSettings(name: name, kind: "oauth2")
            let provider = table.providers[name]
            let planner = table.planner(for: name)
            guard let old = current[name] else {
                made.added.append(name)
                made.slots[name] = ProviderSlot(
                    settings: setting, provider: provider, planner: planner,
                    gate: ProviderGate(name: name, kind: setting.kind, limits: setting.limits), use: ProviderUse())
                continue
            }
            // The slot around the same object shares its count of calls.
            let use = old.holdsSameProvider(as: provider) ? old.use : ProviderUse()
            let change = old.settings.change(to: setting)
            if change == .unchanged, use === old.use, old.planner == planner {
                made.slots[name] = old
                continue
            }
            let gate: ProviderGate
            if change < .repointed {
                gate = old.gate
                if old.settings.limits != setting.limits { made.retunes.append((gate, setting.limits)) }
            } else {
                gate = ProviderGate(name: name, kind: setting.kind, limits: setting.limits)
                made.repointed.append(name)
            }
            made.slots[name] = ProviderSlot(
                settings: setting, provider: provider, planner: planner, gate: gate, use: use)
            made.retired.append(old)
        }
        for (name, old) in current where made.slots[name] == nil {
            made.removed.append(name)
            made.retired.append(old)
        }
        made.removed.sort()
        return made
    }
}
