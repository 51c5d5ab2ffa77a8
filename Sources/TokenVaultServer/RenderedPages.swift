import NIOCore
import Synchronization
import TokenVaultCore

/// Pages of `GET /v1/credentials` as sent, kept while the vault says nothing they show has
/// changed (`Vault.isCurrent`): asked again, such a page costs a lookup instead of fifty rows
/// read, decoded and written (docs/benchmarks.md, "Pages of the listing"), and the event loop
/// can answer it. Keyed by the whole query, the caller's namespaces included, so a caller only
/// ever gets a page of what it may list. Never holds a secret: pages are metadata.
///
/// Bounded by bytes and by pages. Past a bound, pages read under another mark go first (they
/// are stale or soon will be), then every other page.
final class RenderedPages: Sendable {
    private struct Page {
        let mark: ListingMark
        let body: ByteBuffer
    }

    private struct State {
        var pages: [CredentialQuery: Page] = [:]
        var bytes = 0
    }

    static let byteLimit = 1 << 20
    static let pageLimit = 256
    private let vault: Vault
    private let state = Mutex(State())

    init(vault: Vault) {
        self.vault = vault
    }

    /// The page kept for `query`, if it is still what a read would return.
    func page(for query: CredentialQuery) -> ByteBuffer? {
        guard let page = state.withLock({ $0.pages[query] }), vault.isCurrent(page.mark) else { return nil }
        return page.body
    }

    /// Keeps `body`, the page `query` read under `mark` (taken before the read).
    func keep(_ body: ByteBuffer, for query: CredentialQuery, mark: ListingMark) {
        let size = body.readableBytes
        guard size <= Self.byteLimit / 8 else { return }
        state.withLock { state in
            let replaced = state.pages.updateValue(Page(mark: mark, body: body), forKey: query)
            state.bytes += size - (replaced?.body.readableBytes ?? 0)
            guard state.bytes > Self.byteLimit || state.pages.count > Self.pageLimit else { return }
            state.pages = state.pages.filter { $0.value.mark == mark }
            state.bytes = state.pages.values.reduce(0) { $0 + $1.body.readableBytes }
            if state.pages.count > Self.pageLimit / 2 || state.bytes > Self.byteLimit / 2 {
                state.pages = [query: Page(mark: mark, body: body)]
                state.bytes = size
            }
        }
    }

    var size: (pages: Int, bytes: Int) { state.withLock { ($0.pages.count, $0.bytes) } }
}
