import NIOCore
import Synchronization
import TokenVaultCore
import TokenVaultLedger

/// Pages of `GET /v1/credentials` as sent, kept while the vault says nothing they show has
/// changed (`Vault.isCurrent`): asked again, such a page costs a lookup instead of fifty rows
/// read, decoded and written (docs/benchmarks.md, "Pages of the listing"), and the event loop
/// can answer it. Keyed by the whole query, the caller's namespaces included, so a caller only
/// ever gets a page of what it may list. Never holds a secret: pages are metadata.
///
/// Bounded by bytes and by pages. Past a bound, pages read under another mark go first (they
/// are stale), then every other page. While the vault changes all the time (refreshes
/// committing), pages are rarely kept and read as before: a kept page is a quiet vault's.
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
    /// A page larger than this is not kept (a full page of 500 may be).
    static let pageByteLimit = byteLimit / 8
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

    /// Keeps `body`, the page `query` read under `mark` (taken before the read), if it is still
    /// current: one read behind a change would otherwise push current pages out. It is copied
    /// to a buffer of its own size (a page is written into room reserved for its longest form),
    /// so the bound counts what is held.
    func keep(_ body: ByteBuffer, for query: CredentialQuery, mark: ListingMark) {
        let size = body.readableBytes
        guard size <= Self.pageByteLimit else { return }
        var exact = ByteBufferAllocator().buffer(capacity: size)
        exact.writeImmutableBuffer(body)
        let page = Page(mark: mark, body: exact)
        state.withLock { state in
            // Under the lock, so that no page kept under a newer mark meanwhile is pushed out.
            guard vault.isCurrent(mark) else { return }
            let replaced = state.pages.updateValue(page, forKey: query)
            state.bytes += size - (replaced?.body.readableBytes ?? 0)
            guard state.bytes > Self.byteLimit || state.pages.count > Self.pageLimit else { return }
            // Pages under another mark are behind a change since: they go first.
            state.pages = state.pages.filter { $0.value.mark == mark }
            state.bytes = state.pages.values.reduce(0) { $0 + $1.body.readableBytes }
            if state.pages.count > Self.pageLimit / 2 || state.bytes > Self.byteLimit / 2 {
                state.pages = [query: page]
                state.bytes = size
            }
        }
    }

    var size: (pages: Int, bytes: Int) { state.withLock { ($0.pages.count, $0.bytes) } }
}
