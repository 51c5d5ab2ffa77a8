/// The small option values of `TestOAuthServer.Options`. Each one names a way real providers
/// differ (docs/providers/), so a test picks a provider's quirk instead of coding it.

/// How the client proves its identity to the token and revocation endpoints (RFC 6749 2.3.1).
public enum ClientAuthentication: String, Sendable {
    /// HTTP Basic `client_id:client_secret` (T-ID; a public client sends `client_id:`).
    case basic
    /// `client_id` and `client_secret` in the form body (Sber).
    case post
    /// `client_id` in the form only: a public client with no secret.
    case none
}

/// How `expires_in` is spelled in a token response: providers send each of these.
public enum ExpiresInFormat: Sendable {
    /// `"expires_in": 3600` (the lifetime rounded down to whole seconds).
    case integer
    /// `"expires_in": "3600"`.
    case string
    /// `"expires_in": 3600.0`, or the fractional lifetime as it is (`1799.5`).
    case float
    /// No `expires_in` at all.
    case absent
    /// `"expires_in": 0` (some providers' way of not saying).
    case zero
}

/// How `scope` is spelled in a token response. A family with no scopes never gets a `scope` field.
public enum ScopeFormat: Sendable {
    /// `"scope": "a b"` (RFC 6749).
    case string
    /// `"scope": ["a", "b"]` (seen in introspection answers).
    case array
    /// No `scope` field.
    case absent
}

/// The body of an error answer, per provider.
public enum ErrorShape: Sendable {
    /// `{"error": code, "error_description": text}` (RFC 6749 5.2).
    case rfc6749
    /// `{"error": code, "error_message": text}` (T-ID).
    case tinkoff
    /// `{"httpCode": "401", "httpMessage": "Unauthorized", "moreInformation": "code: text"}` (Sber's API gateway).
    case sberGateway
    /// `{"error": code, "error_description": "ESIA-007011: text"}`. The number comes from the code
    /// (docs/providers/esia.md knows 007011, 007007, 007008, 007015 and 007053; the others are guesses);
    /// a description that already starts with `ESIA-` is sent as it is.
    case esia
}

/// The body of a successful revocation (RFC 7009 says nothing about it; T-ID sends either).
public enum RevocationAnswer: Sendable {
    /// `{}` as `application/json`.
    case emptyJSON
    /// `OK` as `text/plain`.
    case plainOK
    /// 200 with no body.
    case empty
}
