import Testing
import TokenVaultProviders

@testable import TokenVaultCourier

/// Answers that carried tokens are zeroed once used, and only the copy that is done: the
/// courier keeps keyed answers until the daemon settles them, and a wipe of the copy it sent must
/// leave the kept one whole (or a settled-too-early answer would spool zeros).
@Suite struct AnswerWipeTests {
    @Test func aWipedArrayIsZeroAndACopyKeptElsewhereIsWhole() {
        var bytes = Array("refresh-token-value".utf8)
        let kept = bytes
        bytes.wipe()
        #expect(bytes == [UInt8](repeating: 0, count: kept.count))
        #expect(kept == Array("refresh-token-value".utf8))
    }

    @Test func aWipedAnswerKeepsItsStatusAndAKeptCopyKeepsItsBody() {
        let body = Array(#"{"access_token":"a","refresh_token":"r"}"#.utf8)
        var sent = CallResult.answer(HTTPAnswer(status: 200, headers: ["content-type": "application/json"], body: body))
        let kept = sent
        sent.wipe()
        guard case .answer(let wiped) = sent, case .answer(let whole) = kept else {
            Issue.record("not answers")
            return
        }
        #expect(wiped.status == 200 && wiped.body.isEmpty && wiped.headers == whole.headers)
        #expect(whole.body == body)
    }
}
