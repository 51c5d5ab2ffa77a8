import Testing

@testable import TokenVaultCore

/// The feed hands each event only to subscribers that asked for its credential and kind, and
/// says beforehand whether anyone would take it: a node skips reading the row of a change made
/// elsewhere when no stream wants it (it hears of every other node's refreshes).
@Suite struct ChangeFeedTests {
    @Test func eventsReachOnlyTheSubscribersThatAskedForThem() async throws {
        let feed = ChangeFeed()
        let id = try CredentialID("pay/one")
        let other = try CredentialID("pay/two")
        #expect(!feed.hasSubscriber(for: .refreshed, id))

        let stores = feed.subscribe(kinds: [.stored])
        #expect(feed.hasSubscriber(for: .stored, id))
        #expect(!feed.hasSubscriber(for: .refreshed, id))

        let watched = feed.subscribe(to: id)
        #expect(feed.hasSubscriber(for: .refreshed, id))
        #expect(!feed.hasSubscriber(for: .refreshed, other))

        let at = Timestamp(milliseconds: 0)
        feed.publish(CredentialEvent(kind: .refreshed, id: other, at: at, metadata: nil))
        feed.publish(CredentialEvent(kind: .refreshed, id: id, at: at, metadata: nil))
        feed.publish(CredentialEvent(kind: .stored, id: other, at: at, metadata: nil))
        feed.close()

        var storeKinds: [CredentialEvent.Kind] = []
        for await event in stores { storeKinds.append(event.kind) }
        var watchedIDs: [CredentialID] = []
        for await event in watched { watchedIDs.append(event.id) }
        #expect(storeKinds == [.stored])
        #expect(watchedIDs == [id])
    }
}
