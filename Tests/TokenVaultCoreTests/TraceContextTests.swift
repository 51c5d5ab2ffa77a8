import Testing
import TokenVaultCore

/// W3C Trace Context `traceparent`: what is read, and what is ignored as the specification asks.
@Suite struct TraceContextTests {
    @Test func aValidHeaderGivesItsTraceAndParent() {
        let trace = TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        #expect(trace?.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && trace?.parentID == "00f067aa0ba902b7")
        // A later version is read by its first four fields.
        #expect(TraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what") != nil)
    }

    @Test(arguments: [
        "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
    ])
    func aMalformedHeaderIsIgnored(_ header: String) {
        #expect(TraceContext(traceparent: header) == nil)
    }
}
