import NIOCore
import Synchronization
import Testing

@testable import TokenVaultServer

/// The health document's JSON is encoded again only when the document changed, and always then.
@Suite struct LastEncodingTests {
    /// A document that counts its encodings.
    struct Probe: Encodable, Equatable, Sendable {
        static let encodings = Atomic<Int>(0)
        let value: Int

        func encode(to encoder: any Encoder) throws {
            Self.encodings.add(1, ordering: .relaxed)
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
    }

    @Test func anEqualDocumentReusesTheBodyAndAChangedOneIsEncodedAgain() throws {
        let encoding = LastEncoding<Probe>()
        let before = Probe.encodings.load(ordering: .relaxed)
        #expect(String(buffer: try encoding.body(Probe(value: 1))) == "1")
        #expect(String(buffer: try encoding.body(Probe(value: 1))) == "1")
        #expect(Probe.encodings.load(ordering: .relaxed) - before == 1)
        #expect(String(buffer: try encoding.body(Probe(value: 2))) == "2")
        #expect(String(buffer: try encoding.body(Probe(value: 1))) == "1")
        #expect(Probe.encodings.load(ordering: .relaxed) - before == 3)
    }
}
