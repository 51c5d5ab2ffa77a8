import NIOCore
import Testing
import TokenVaultCore

@testable import TokenVaultServer

/// `TokenRedaction` over every way a body can be cut into pieces.
@Suite struct TokenRedactionTests {
    static let token = SecretBytes(utf8: "at-Secret/+=")

    /// `text` through a redaction in pieces cut at `cuts`, then put back together.
    static func redacted(_ text: String, cuts: [Int], tokens: [SecretBytes] = [token]) -> String {
        var redaction = TokenRedaction(tokens: tokens)
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var start = 0
        for end in cuts.sorted() + [bytes.count] where end >= start {
            let passed = redaction.pass(ByteBuffer(bytes: bytes[start..<end]))
            out.append(contentsOf: passed.readableBytesView)
            start = end
        }
        if let last = redaction.finish() { out.append(contentsOf: last.readableBytesView) }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func aTokenAsSentIsOverwrittenWhereverTheBodyIsCut() {
        let text = #"{"echo":"at-Secret/+=","after":1}"#
        let expected = #"{"echo":"************","after":1}"#
        for cut in 0...text.utf8.count {
            #expect(Self.redacted(text, cuts: [cut]) == expected, "cut at \(cut)")
        }
        // A byte at a time.
        #expect(Self.redacted(text, cuts: Array(0...text.utf8.count)) == expected)
    }

    /// Escaped in either case, some bytes or all: the whole escaped span goes, length kept.
    @Test func aPercentEncodedTokenIsOverwritten() {
        for encoded in ["at-Secret%2F%2B%3D", "at-Secret%2f%2b%3d", "%61%74%2D%53ecret/%2B="] {
            let text = "?token=\(encoded)&x=1"
            let expected = "?token=" + String(repeating: "*", count: encoded.utf8.count) + "&x=1"
            for cut in 0...text.utf8.count {
                #expect(Self.redacted(text, cuts: [cut]) == expected, "\(encoded) cut at \(cut)")
            }
        }
    }

    @Test func aBodyWithoutATokenPassesUnchanged() {
        let text = "at-Secret/+ is not it, nor %zz, nor a lone %, nor at-"
        for cut in 0...text.utf8.count {
            #expect(Self.redacted(text, cuts: [cut]) == text, "cut at \(cut)")
        }
    }

    /// Only what may begin a token waits for the next piece; the rest goes out at once.
    @Test func onlyAPossibleBeginningIsHeldBack() {
        var redaction = TokenRedaction(tokens: [Self.token])
        let first = redaction.pass(ByteBuffer(string: "data: 1\n"))
        #expect(String(buffer: first) == "data: 1\n")
        let second = redaction.pass(ByteBuffer(string: "data: at-Sec"))
        #expect(String(buffer: second) == "data: ")
        let third = redaction.pass(ByteBuffer(string: "ond\n"))
        #expect(String(buffer: third) == "at-Second\n")
        #expect(redaction.finish() == nil)
    }

    /// Each token the call carried (after a refresh, the refused one too), however they overlap.
    @Test func everyTokenOfTheCallIsOverwritten() {
        let renewed = SecretBytes(utf8: "at-Secret/+=2")
        let text = "a at-Secret/+= b at-Secret/+=2 c"
        let expected = "a ************ b ************* c"
        for cut in 0...text.utf8.count {
            #expect(Self.redacted(text, cuts: [cut], tokens: [Self.token, renewed]) == expected, "cut at \(cut)")
        }
    }
}
