import Foundation

/// Reads the token payload shapes TokenVault accepts:
/// - T-ID's `TinkoffTokenPayload` (`accessToken`, `refreshToken`, `idToken`, `expirationTimeout`)
///   and its wire form (`access_token`, ...);
/// - any RFC 6749 token response: `token_type` missing or in any case, `scope` as a string or an
///   array, `expires_in` as a number, a float, a numeric string, 0 or missing;
/// - an absolute `expires_at` (Unix seconds or RFC 3339);
/// - an EBS verification result (`verify_token`, `expired`): a credential that never refreshes.
/// Fields it does not know are kept, sealed, as provider extras. Errors name the field and
/// never echo a token.
public struct TokenPayloadDecoder: Sendable {
    /// Lifetimes above this are refused as nonsense rather than silently capped.
    public static let maximumLifetimeSeconds: Double = 100 * 365 * 24 * 3600

    private static let knownFields: Set<String> = [
        "access_token", "accessToken", "refresh_token", "refreshToken", "id_token", "idToken", "token_type",
        "tokenType", "expires_in", "expirationTimeout", "expires_at", "scope", "refresh_token_expires_in",
        "refresh_in", "verify_token", "expired",
    ]

    /// How an EBS `expired` value is read (a provider setting: the unit is undocumented).
    public var expiredUnit: ExpiredUnit
    /// The largest tokens accepted; a larger one is refused, naming the field and the limit.
    public var sizes: TokenSizeLimits

    public init(expiredUnit: ExpiredUnit = .seconds, sizes: TokenSizeLimits = TokenSizeLimits()) {
        self.expiredUnit = expiredUnit
        self.sizes = sizes
    }

    public func decode(_ body: some Collection<UInt8>) throws -> TokenPayload {
        let json: JSONValue
        do {
            json = try JSONDecoder().decode(JSONValue.self, from: Data(body))
        } catch {
            throw VaultError.invalidPayload("the body is not valid JSON")
        }
        guard case .object(let fields) = json else {
            throw VaultError.invalidPayload("expected a JSON object, got \(json.typeName)")
        }
        return try decode(fields)
    }

    public func decode(_ fields: [String: JSONValue]) throws -> TokenPayload {
        let verifyToken = try optionalSecret(fields, "verify_token", limit: sizes.accessToken)
        let accessToken = try optionalSecret(fields, "access_token", "accessToken", limit: sizes.accessToken)
        let kind: CredentialKind
        let primary: SecretBytes
        switch (accessToken, verifyToken) {
        case (let access?, nil):
            kind = .oauth2
            primary = access
        case (nil, let verify?):
            kind = .verifyToken
            primary = verify
        case (nil, nil):
            throw VaultError.invalidField("access_token", "is required (or verify_token for an EBS verification)")
        case (_?, _?):
            throw VaultError.invalidPayload("give either access_token or verify_token, not both")
        }

        let refreshToken = try optionalSecret(fields, "refresh_token", "refreshToken", limit: sizes.refreshToken)
        if kind == .verifyToken, refreshToken != nil {
            throw VaultError.invalidField("refresh_token", "a verify_token credential cannot be refreshed")
        }
        let idToken = try optionalSecret(fields, "id_token", "idToken", limit: sizes.idToken)
        let extras = try extrasSecret(fields)

        let expiry: TokenPayload.Expiry
        if kind == .verifyToken {
            expiry = try verifyTokenExpiry(fields["expired"])
        } else if let absolute = fields["expires_at"], absolute != .null {
            expiry = .at(try absoluteTime(absolute, field: "expires_at"))
        } else {
            let (name, value) = first(fields, "expires_in", "expirationTimeout")
            expiry = try lifetime(value, field: name).map { .after(seconds: $0) } ?? .unknown
        }
        let refreshExpiry = try lifetime(fields["refresh_token_expires_in"], field: "refresh_token_expires_in")

        return TokenPayload(
            kind: kind,
            secrets: CredentialSecrets(
                accessToken: primary, refreshToken: refreshToken, idToken: idToken, extras: extras),
            tokenType: try tokenType(fields),
            scopes: try scopes(fields["scope"]),
            expiry: expiry,
            refreshTokenExpiry: refreshExpiry.map { .after(seconds: $0) } ?? .unknown,
            refreshIn: try lifetime(fields["refresh_in"], field: "refresh_in"),
            subject: idToken.flatMap(JWTClaims.subject(of:)))
    }

    // MARK: Fields

    private func first(_ fields: [String: JSONValue], _ names: String...) -> (String, JSONValue?) {
        for name in names where fields[name] != nil { return (name, fields[name]) }
        return (names[0], nil)
    }

    /// A token string; absent, null and "" all mean "none" (providers use each).
    private func optionalSecret(_ fields: [String: JSONValue], _ names: String..., limit: Int) throws -> SecretBytes? {
        for name in names {
            switch fields[name] {
            case nil, .null: continue
            case .string(let value) where value.utf8.count > limit:
                throw VaultError.invalidField(name, "is \(value.utf8.count) bytes; at most \(limit) are accepted")
            case .string(let value): return value.isEmpty ? nil : SecretBytes(utf8: value)
            case let other?: throw VaultError.invalidField(name, "expected a string, got \(other.typeName)")
            }
        }
        return nil
    }

    private func tokenType(_ fields: [String: JSONValue]) throws -> String? {
        let (name, value) = first(fields, "token_type", "tokenType")
        switch value {
        case nil, .null: return nil
        case .string(let text) where text.isEmpty: return nil
        case .string(let text) where text.lowercased() == "bearer": return "Bearer"
        case .string(let text) where text.utf8.count <= 64: return text
        case .string: throw VaultError.invalidField(name, "is longer than 64 characters")
        case let other?: throw VaultError.invalidField(name, "expected a string, got \(other.typeName)")
        }
    }

    private func scopes(_ value: JSONValue?) throws -> [String] {
        switch value {
        case nil, .null: return []
        case .string(let text): return text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        case .array(let items):
            return try items.map { item in
                guard case .string(let scope) = item else {
                    throw VaultError.invalidField("scope", "array items must be strings, got \(item.typeName)")
                }
                return scope
            }
        case let other?:
            throw VaultError.invalidField("scope", "expected a string or an array of strings, got \(other.typeName)")
        }
    }

    /// Seconds as a number, a float or a numeric string. `nil` for absent, null and 0
    /// (providers send 0 when they do not say); negative, non-numeric and absurd values are errors.
    private func lifetime(_ value: JSONValue?, field: String) throws -> Double? {
        let seconds: Double
        switch value {
        case nil, .null: return nil
        case .integer(let number): seconds = Double(number)
        case .number(let number): seconds = number
        case .string(let text):
            guard let number = Double(text.trimmingCharacters(in: .whitespaces)), number.isFinite else {
                throw VaultError.invalidField(field, "expected a number of seconds, got a non-numeric string")
            }
            seconds = number
        case let other?:
            throw VaultError.invalidField(field, "expected a number of seconds, got \(other.typeName)")
        }
        guard seconds.isFinite, seconds >= 0 else {
            throw VaultError.invalidField(field, "must not be negative")
        }
        let whole = try boundedLifetime(seconds, field: field)
        return whole == 0 ? nil : whole
    }

    /// Unix seconds (number or numeric string) or an RFC 3339 date.
    private func absoluteTime(_ value: JSONValue, field: String) throws -> Timestamp {
        switch value {
        case .integer(let seconds): return try plausible(Double(seconds), field: field)
        case .number(let seconds): return try plausible(seconds, field: field)
        case .string(let text):
            if let seconds = Double(text) { return try plausible(seconds, field: field) }
            if let date = RFC3339.parse(text) { return try plausible(date.timeIntervalSince1970, field: field) }
            throw VaultError.invalidField(field, "expected Unix seconds or an RFC 3339 date")
        default:
            throw VaultError.invalidField(field, "expected Unix seconds or an RFC 3339 date, got \(value.typeName)")
        }
    }

    private func plausible(_ seconds: Double, field: String) throws -> Timestamp {
        guard seconds.isFinite, seconds > 0, seconds < 32_503_680_000 else {
            throw VaultError.invalidField(field, "is not a time between 1970 and 3000 in Unix seconds")
        }
        return Timestamp(seconds: seconds)
    }

    /// EBS `expired`: its unit is undocumented, so it is a setting (`expiredUnit`). The default,
    /// `.seconds`, reads seconds from now unless the number is large enough to be an absolute
    /// time (over 10^9: Unix seconds; over 10^12: Unix milliseconds).
    private func verifyTokenExpiry(_ value: JSONValue?) throws -> TokenPayload.Expiry {
        let number: Double
        switch value {
        case nil, .null: return .unknown
        case .integer(let integer): number = Double(integer)
        case .number(let double): number = double
        case .string(let text):
            guard let parsed = Double(text.trimmingCharacters(in: .whitespaces)) else {
                if let date = RFC3339.parse(text) {
                    return .at(try plausible(date.timeIntervalSince1970, field: "expired"))
                }
                throw VaultError.invalidField("expired", "expected a number or an RFC 3339 date")
            }
            number = parsed
        case let other?: throw VaultError.invalidField("expired", "expected a number, got \(other.typeName)")
        }
        guard number.isFinite, number >= 0 else { throw VaultError.invalidField("expired", "must not be negative") }
        switch expiredUnit {
        case .unixSeconds: return .at(try plausible(number, field: "expired"))
        case .unixMilliseconds: return .at(try plausible(number / 1000, field: "expired"))
        case .milliseconds:
            return number == 0 ? .unknown : .after(seconds: try boundedLifetime(number / 1000, field: "expired"))
        case .seconds:
            if number > 1e12 { return .at(try plausible(number / 1000, field: "expired")) }
            if number > 1e9 { return .at(try plausible(number, field: "expired")) }
            return number == 0 ? .unknown : .after(seconds: try boundedLifetime(number, field: "expired"))
        }
    }

    /// Whole seconds of a relative lifetime, refused above 100 years (a number that large is a
    /// mistake, and it would not fit a time).
    private func boundedLifetime(_ seconds: Double, field: String) throws -> Double {
        guard seconds <= Self.maximumLifetimeSeconds else {
            throw VaultError.invalidField(field, "is more than 100 years (\(Int64(Self.maximumLifetimeSeconds)) s)")
        }
        return seconds.rounded(.down)
    }

    private func extrasSecret(_ fields: [String: JSONValue]) throws -> SecretBytes? {
        let unknown = fields.filter { !Self.knownFields.contains($0.key) }
        guard !unknown.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return SecretBytes(try encoder.encode(JSONValue.object(unknown)))
    }
}

/// RFC 3339 dates, with or without fractional seconds.
enum RFC3339 {
    static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

/// How an EBS `expired` number is read (`providers.<name>.expired_unit`).
public enum ExpiredUnit: String, Sendable, CaseIterable {
    /// Seconds from now; above 10^9 absolute Unix seconds, above 10^12 Unix milliseconds.
    case seconds
    case milliseconds
    case unixSeconds = "unix_seconds"
    case unixMilliseconds = "unix_milliseconds"
}

/// The largest tokens a payload may carry (`limits.max_*_token_bytes`): a token of megabytes is
/// a mistake or an attack, and every read of it would cost as much.
public struct TokenSizeLimits: Sendable, Equatable {
    /// An access token, or an EBS verify token.
    public var accessToken = 16 * 1024
    public var refreshToken = 8 * 1024
    public var idToken = 16 * 1024

    public init() {}
}
