import Foundation

/// A migration file's statements, one by one: postgres-nio sends each query with the extended
/// protocol, which takes one statement at a time. Splits at semicolons outside quotes ('…'),
/// quoted names ("…"), dollar-quoted bodies ($$…$$, $tag$…$tag$) and comments (-- and /* */).
enum SQLScript {
    static func statements(_ script: String) -> [String] {
        let characters = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0
        func flush() {
            let text = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty, !isOnlyComments(text) { statements.append(text) }
            current = String.UnicodeScalarView()
        }
        while index < characters.count {
            let character = characters[index]
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            switch character {
            case "-" where next == "-":
                while index < characters.count, characters[index] != "\n" {
                    current.append(characters[index])
                    index += 1
                }
                continue
            case "/" where next == "*":
                current.append(contentsOf: ["/", "*"])
                index += 2
                while index < characters.count,
                    !(characters[index] == "*" && index + 1 < characters.count && characters[index + 1] == "/")
                {
                    current.append(characters[index])
                    index += 1
                }
                if index < characters.count {
                    current.append(contentsOf: ["*", "/"])
                    index += 2
                }
                continue
            case "'", "\"":
                current.append(character)
                index += 1
                while index < characters.count {
                    current.append(characters[index])
                    if characters[index] == character {
                        // A doubled quote is one quote inside the text.
                        if index + 1 < characters.count, characters[index + 1] == character {
                            current.append(characters[index + 1])
                            index += 2
                            continue
                        }
                        index += 1
                        break
                    }
                    index += 1
                }
                continue
            case "$":
                // $tag$ … $tag$, the tag being empty or an identifier.
                var end = index + 1
                while end < characters.count,
                    characters[end] == "_" || characters[end].properties.isAlphabetic
                        || ("0"..."9").contains(characters[end])
                {
                    end += 1
                }
                if end < characters.count, characters[end] == "$" {
                    let tag = Array(characters[index...end])
                    current.append(contentsOf: tag)
                    index = end + 1
                    while index < characters.count {
                        if characters[index] == "$", index + tag.count <= characters.count,
                            Array(characters[index..<(index + tag.count)]) == tag
                        {
                            current.append(contentsOf: tag)
                            index += tag.count
                            break
                        }
                        current.append(characters[index])
                        index += 1
                    }
                    continue
                }
            case ";":
                flush()
                index += 1
                continue
            default:
                break
            }
            current.append(character)
            index += 1
        }
        flush()
        return statements
    }

    private static func isOnlyComments(_ text: String) -> Bool {
        text.split(separator: "\n").allSatisfy { $0.trimmingCharacters(in: .whitespaces).hasPrefix("--") }
    }
}
