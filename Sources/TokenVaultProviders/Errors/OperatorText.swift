import TokenVaultCore

/// Turns text that came from a provider into a message safe to show operators: one line,
/// printable, at most 200 characters, and with anything that looks like a token removed.
///
/// Providers sometimes echo request data in their error descriptions. The caller scrubs the
/// secrets it knows it sent; the token-shape rule below catches the ones it does not know
/// (an access token from another request, an id token), at the price of also hiding long
/// request identifiers.
enum OperatorText {
    static let maximumLength = 200
    static let redacted = "<redacted>"

    /// Characters a bearer token, a JWT or a base64 blob is made of.
    private static func isTokenCharacter(_ character: Character) -> Bool {
        guard character.isASCII else { return false }
        return character.isLetter || character.isNumber || "-._~+/=".contains(character)
    }

    /// A run of token characters this long, with both letters and digits, is taken for a token.
    static let tokenRunLength = 20

    static func clean(_ text: String, removing secrets: [SecretBytes] = [], limit: Int = maximumLength) -> String {
        var text = text
        for secret in secrets where secret.count >= 4 {
            let value = secret.revealString()
            text = text.replacing(value, with: redacted)
            let encoded = FormEncoding.escape(value)
            if encoded != value { text = text.replacing(encoded, with: redacted) }
        }
        let oneLine = String(text.map { $0.isASCII && ($0.asciiValue! < 0x20 || $0.asciiValue! == 0x7F) ? " " : $0 })
        return truncate(redactTokenShapes(oneLine).trimmingSpaces(), to: limit)
    }

    static func truncate(_ text: String, to limit: Int) -> String {
        guard text.count > limit else { return text }
        return String(text.prefix(limit - 1)) + "…"
    }

    private static func redactTokenShapes(_ text: String) -> String {
        var output = ""
        var run = ""
        func flush() {
            let looksLikeToken =
                run.count >= tokenRunLength && run.contains(where: \.isNumber) && run.contains(where: \.isLetter)
            output += looksLikeToken ? redacted : run
            run = ""
        }
        for character in text {
            if isTokenCharacter(character) {
                run.append(character)
            } else {
                flush()
                output.append(character)
            }
        }
        flush()
        return output
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var slice = self[...]
        while slice.first == " " { slice = slice.dropFirst() }
        while slice.last == " " { slice = slice.dropLast() }
        return String(slice)
    }
}
