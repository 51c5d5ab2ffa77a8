import Synchronization

/// The provider's state behind one lock, shared by the public API and every connection handler.
/// A class of its own (not the server) so open connections do not keep a dropped server alive.
final class ProviderCore: Sendable {
    let state: Mutex<ProviderState>

    init(options: TestOAuthServer.Options) { state = Mutex(ProviderState(options: options)) }

    func receive(_ request: RecordedRequest) -> ConnectionAction { state.withLock { $0.receive(request) } }

    /// The normal answer to a request whose script said to wait first.
    func serveAfterDelay(_ request: RecordedRequest) -> HTTPReply { state.withLock { $0.serve(request) } }
}
