/// How a device sign-in ended. A store shared by several nodes tells the others, which did not
/// poll the grant, so that their event streams announce the end too.
public enum SignInEnd: Sendable, Equatable {
    /// Its tokens are stored.
    case authorized
    /// The server refused it, or it expired: `reason` is the code (`access_denied`, …).
    case failed(reason: String)

    /// The code of a failed sign-in; nil for one authorized.
    public var reason: String? {
        guard case .failed(let reason) = self else { return nil }
        return reason
    }

    /// What the watch and events streams call it.
    public var eventKind: CredentialEvent.Kind { self == .authorized ? .authorized : .authorizationFailed }

    /// The code as the change feed carries it to the other nodes: letters, digits, `_`, `-` and
    /// `.` (a notification's fields are split at `|`), at most 64 of them, never empty for a
    /// failure (`authorization_failed` when none is left); empty for a sign-in authorized.
    public var feedCode: String {
        guard let reason else { return "" }
        let kept = String(String.UnicodeScalarView(reason.unicodeScalars.filter(Self.isCodeCharacter).prefix(64)))
        return kept.isEmpty ? "authorization_failed" : kept
    }

    /// The end a change feed's `code` says (`feedCode`).
    public init(feedCode code: String) {
        self = code.isEmpty ? .authorized : .failed(reason: code)
    }

    private static func isCodeCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a"..."z", "A"..."Z", "0"..."9", "_", "-", ".": true
        default: false
        }
    }
}
