import NIOCore
import Synchronization

/// A document's JSON, encoded again only when the document changed. The health check is polled
/// (by load balancers, systemd, `tokenvault status`) and its document changes about once a second
/// (`uptime_seconds`); building it is cheap, encoding it through `JSONEncoder` was most of the
/// request's CPU (docs/benchmarks.md). Compared whole, so a change of any field is
/// always in the next answer.
final class LastEncoding<Document: Encodable & Equatable & Sendable>: Sendable {
    private let last = Mutex<(document: Document, body: ByteBuffer)?>(nil)

    /// The body `VaultAPI.jsonBody` writes for `document`.
    func body(_ document: Document) throws -> ByteBuffer {
        if let body = last.withLock({ $0?.document == document ? $0?.body : nil }) { return body }
        let body = try VaultAPI.jsonBody(document)
        last.withLock { $0 = (document, body) }
        return body
    }
}
