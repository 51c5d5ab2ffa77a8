import Foundation

/// Text from outside (labels, subjects, provider error messages, daemon answers) made safe to
/// print on a terminal: control characters (C0, DEL, C1) and the bidirectional overrides that
/// reorder what follows them are shown as escapes (`\x1B`, `\u{202E}`), so a label cannot move
/// the cursor, rewrite earlier lines, retitle the window or hide text in `show`, `ls` or `audit`.
enum TerminalText {
    static func safe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var safe = ""
        safe.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if !isUnsafe(scalar) {
                safe.unicodeScalars.append(scalar)
            } else if scalar.value < 0x100 {
                safe += "\\x" + String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 2)
            } else {
                safe += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return safe
    }

    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true
        default: false
        }
    }

    /// One line on stderr, made safe.
    static func error(_ line: String) {
        FileHandle.standardError.write(Data((safe(line) + "\n").utf8))
    }

    /// One line on stdout, made safe, written straight to the descriptor (a pipe sees each line
    /// as it happens).
    static func line(_ line: String) {
        FileHandle.standardOutput.write(Data((safe(line) + "\n").utf8))
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
