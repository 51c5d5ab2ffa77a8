import Foundation
import Testing

@testable import TokenVaultStorage

/// Scopes and labels read without `JSONDecoder` must be exactly what it would decode, and
/// anything the direct reader does not handle must still go through it.
@Suite struct CompactJSONColumnTests {
    static func encoded<Value: Encodable>(_ value: Value) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test(arguments: [
        [String](), ["openid"], ["opensme/individual/id/get", "profile"], ["with \"quotes\"", "back\\slash"],
        ["tab\there", "ünïcødé", "", "a,b", "x:y"],
    ])
    func readsScopesAsJSONDecoderDoes(scopes: [String]) throws {
        #expect(CompactJSONColumn.strings(try Self.encoded(scopes)) == scopes)
    }

    @Test(arguments: [
        [String: String](), ["team": "payments"], ["a": "1", "b/c": "d/e", "": "empty key"],
        ["quote\"d": "line\nbreak", "ключ": "значение"],
    ])
    func readsLabelsAsJSONDecoderDoes(labels: [String: String]) throws {
        #expect(CompactJSONColumn.labels(try Self.encoded(labels)) == labels)
    }

    /// What the writer stores is valid JSON that `JSONDecoder` and the direct reader both read
    /// back as the value written, keys sorted as `JSONEncoder` sorts them.
    @Test(arguments: [
        [String: String](), ["team": "payments"], ["b": "2", "a": "1", "b/c": "d/e", "": "empty key"],
        ["quote\"d": "line\nbreak", "ключ": "значение", "ctl": "\u{01}\u{1F}", "back\\": "\\slash"],
    ])
    func writesWhatBothReadersReadBack(labels: [String: String]) throws {
        let text = CompactJSONColumn.encode(labels: labels)
        #expect(try JSONDecoder().decode([String: String].self, from: Data(text.utf8)) == labels)
        #expect(CompactJSONColumn.labels(text) == labels)
        if labels.values.allSatisfy({ $0.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0 != "\\" } }) {
            #expect(text == (try Self.encoded(labels)).replacingOccurrences(of: "\\/", with: "/"))
        }
        let scopes = labels.keys.sorted()
        let scopesText = CompactJSONColumn.encode(strings: scopes)
        #expect(try JSONDecoder().decode([String].self, from: Data(scopesText.utf8)) == scopes)
        #expect(CompactJSONColumn.strings(scopesText) == scopes)
    }

    @Test func fallsBackToJSONDecoderForOtherSpellingsAndGivesUpOnGarbage() {
        #expect(CompactJSONColumn.strings(#"[ "a" , "b" ]"#) == ["a", "b"])
        #expect(CompactJSONColumn.strings(#"["\u0041"]"#) == ["A"])
        #expect(CompactJSONColumn.labels(#"{"k": "v"}"#) == ["k": "v"])
        #expect(CompactJSONColumn.strings(nil) == [])
        // Whatever JSONDecoder makes of it (Foundation on Linux accepts a trailing comma).
        let trailing = #"["a",]"#
        #expect(
            CompactJSONColumn.strings(trailing) == (try? JSONDecoder().decode([String].self, from: Data(trailing.utf8)))
                ?? [])
        #expect(CompactJSONColumn.strings(#"["a""#) == [])
        #expect(CompactJSONColumn.labels(#"{"k"}"#) == [:])
        #expect(CompactJSONColumn.labels(#"{"k":"v","k2"}"#) == [:])
        #expect(CompactJSONColumn.strings("not json") == [])
    }
}
