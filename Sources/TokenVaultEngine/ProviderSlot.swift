import Synchronization
import TokenVaultCore

/// One provider instance as the engine calls it: its provider object (nil for an instance
/// without endpoints), its gate, and the calls using them. A reload replaces slots; a replaced
/// slot is retired, and the calls that took it before finish on it, so its provider is released
/// only once they are done (`whenIdle`).
final class ProviderSlot: Sendable {
    let settings: ProviderSettings
    let provider: (any TokenProvider)?
    let gate: ProviderGate

    private struct Use {
        var calls = 0
        var idle: [CheckedContinuation<Void, Never>] = []
    }

    private let use = Mutex(Use())

    init(settings: ProviderSettings, provider: (any TokenProvider)?, gate: ProviderGate) {
        self.settings = settings
        self.provider = provider
        self.gate = gate
    }

    /// A call takes the slot (under the engine's table lock, so a replacement sees it).
    func enter() { use.withLock { $0.calls += 1 } }

    func leave() {
        let waiting = use.withLock { use -> [CheckedContinuation<Void, Never>] in
            use.calls -= 1
            guard use.calls == 0 else { return [] }
            defer { use.idle = [] }
            return use.idle
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Returns once no call uses the slot (call it after the slot left the table).
    func whenIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = use.withLock { use -> Bool in
                guard use.calls > 0 else { return true }
                use.idle.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
