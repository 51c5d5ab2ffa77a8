package tokenvault

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Problem is an RFC 9457 problem document the daemon answered with. Code is stable and
// machine-readable ("credential_not_found", "token_expired", ...); Detail is for people and never
// holds a secret. Reach it with errors.As:
//
//	var problem *tokenvault.Problem
//	if errors.As(err, &problem) && problem.Code == tokenvault.CodeNeedsReauth { ... }
type Problem struct {
	Type   string `json:"type,omitempty"`
	Title  string `json:"title,omitempty"`
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail,omitempty"`
	// Instance is urn:tokenvault:request:<X-Request-Id>, matching the daemon's log lines.
	Instance string `json:"instance,omitempty"`
	// Field is, for a 400, the offending body path (token.expires_in) or query parameter (limit).
	Field string `json:"field,omitempty"`
	// Permission is, for a 403, the permission the caller lacks.
	Permission string `json:"permission,omitempty"`
}

func (p *Problem) Error() string {
	text := p.Detail
	if text == "" {
		text = p.Title
	}
	if text == "" {
		text = p.Code
	}
	text += fmt.Sprintf(" (%d %s", p.Status, p.Code)
	if p.Field != "" {
		text += ", field " + p.Field
	}
	if p.Permission != "" {
		text += ", needs " + p.Permission
	}
	if p.Instance != "" {
		text += ", " + p.Instance
	}
	return text + ")"
}

// HasCode reports whether err is a Problem with this code.
func HasCode(err error, code string) bool {
	var problem *Problem
	return errors.As(err, &problem) && problem.Code == code
}

// The codes the API sends (docs/openapi.yaml, Problem), with the status each comes with.
const (
	CodeInvalidField          = "invalid_field"
	CodeInvalidPayload        = "invalid_payload"
	CodeInvalidCredentialID   = "invalid_credential_id"
	CodeInvalidRequest        = "invalid_request"
	CodeForbidden             = "forbidden"
	CodeCredentialNotFound    = "credential_not_found"
	CodeNotFound              = "not_found"
	CodeMethodNotAllowed      = "method_not_allowed"
	CodeTokenExpired          = "token_expired"
	CodeMinTTLUnreachable     = "min_ttl_unreachable"
	CodeNeedsReauth           = "needs_reauth"
	CodeRevokePending         = "revoke_pending"
	CodeNotRefreshable        = "not_refreshable"
	CodeConflict              = "conflict"
	CodePayloadTooLarge       = "payload_too_large"
	CodeUnsupportedMediaType  = "unsupported_media_type"
	CodeUnknownProvider       = "unknown_provider"
	CodeProviderNotConfigured = "provider_not_configured"
	CodeProviderRejected      = "provider_rejected"
	CodeNonceMismatch         = "nonce_mismatch"
	CodeAudienceMismatch      = "audience_mismatch"
	CodeIDTokenExpired        = "id_token_expired"
	CodeIDTokenInvalid        = "id_token_invalid"
	CodeUpstreamNotAllowed    = "upstream_not_allowed"
	CodeRateLimited           = "rate_limited"
	CodeTooManyStreams        = "too_many_streams"
	CodeTooManyProxyCalls     = "too_many_proxy_calls"
	CodeInternalError         = "internal_error"
	CodeIntegrityError        = "integrity_error"
	CodeCryptoError           = "crypto_error"
	CodeUnknownKeyTerm        = "unknown_key_term"
	CodeStorageError          = "storage_error"
	CodeWrongMasterKey        = "wrong_master_key"
	CodeKeySourceError        = "key_source_error"
	CodeMigrationError        = "migration_error"
	CodeProviderUnavailable   = "provider_unavailable"
	CodeUpstreamUnavailable   = "upstream_unavailable"
	CodeUpstreamTooLarge      = "upstream_too_large"
	CodeStorageUnavailable    = "storage_unavailable"
	CodeCommitPending         = "commit_pending"
	CodeEngineUnavailable     = "engine_unavailable"
	CodeClockSkew             = "clock_skew"
	CodeTooManyConnections    = "too_many_connections"
	CodeUpstreamTimeout       = "upstream_timeout"
	CodeInvalidCallback       = "invalid_callback"
	CodeAuthorizationUnknown  = "authorization_unknown"
	CodeAuthorizationExpired  = "authorization_expired"
	CodeAuthorizationMismatch = "authorization_mismatch"
	CodeAuthorizationDenied   = "authorization_denied"
	CodeIssuerMismatch        = "issuer_mismatch"
	CodeRedirectURINotAllowed = "redirect_uri_not_allowed"
	CodeTooManyAuthorizations = "too_many_authorizations"
)

// CodeStatus maps every code the API sends to its HTTP status.
var CodeStatus = map[string]int{
	CodeInvalidField: 400, CodeInvalidPayload: 400, CodeInvalidCredentialID: 400, CodeInvalidRequest: 400,
	CodeForbidden:          403,
	CodeCredentialNotFound: 404, CodeNotFound: 404,
	CodeMethodNotAllowed: 405,
	CodeTokenExpired:     409, CodeMinTTLUnreachable: 409, CodeNeedsReauth: 409, CodeRevokePending: 409,
	CodeNotRefreshable: 409, CodeConflict: 409,
	CodePayloadTooLarge:      413,
	CodeUnsupportedMediaType: 415,
	CodeUnknownProvider:      422, CodeProviderNotConfigured: 422, CodeProviderRejected: 422, CodeNonceMismatch: 422,
	CodeAudienceMismatch: 422, CodeIDTokenExpired: 422, CodeIDTokenInvalid: 422, CodeUpstreamNotAllowed: 422,
	CodeRateLimited: 429, CodeTooManyStreams: 429, CodeTooManyProxyCalls: 429,
	CodeInternalError: 500, CodeIntegrityError: 500, CodeCryptoError: 500, CodeUnknownKeyTerm: 500,
	CodeStorageError: 500, CodeWrongMasterKey: 500, CodeKeySourceError: 500, CodeMigrationError: 500,
	CodeProviderUnavailable: 502, CodeUpstreamUnavailable: 502, CodeUpstreamTooLarge: 502,
	CodeStorageUnavailable: 503, CodeCommitPending: 503, CodeEngineUnavailable: 503, CodeTooManyConnections: 503,
	CodeClockSkew:       503,
	CodeUpstreamTimeout: 504,
	CodeInvalidCallback: 400, CodeAuthorizationUnknown: 404, CodeAuthorizationExpired: 409,
	CodeAuthorizationMismatch: 409, CodeAuthorizationDenied: 422, CodeIssuerMismatch: 422,
	CodeRedirectURINotAllowed: 422, CodeTooManyAuthorizations: 429,
}

// problemFrom is the error for an answer with an unexpected status: its problem document when it
// has one, otherwise a Problem with code http_<status>.
func problemFrom(status int, contentType string, body []byte) error {
	problem := &Problem{}
	if strings.Contains(contentType, "json") && json.Unmarshal(body, problem) == nil && problem.Code != "" {
		if problem.Status == 0 {
			problem.Status = status
		}
		return problem
	}
	// A body is quoted only from an error status: a success's body may be a token.
	detail := ""
	if status >= 400 {
		detail = string(body)
		if len(detail) > 200 {
			detail = detail[:200]
		}
	}
	return &Problem{Status: status, Code: fmt.Sprintf("http_%d", status), Detail: detail}
}
