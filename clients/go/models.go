package tokenvault

import "fmt"

// Token is an access token: the credential's own (GET .../token) or one derived from it
// (ExchangeToken). Never a refresh token: the daemon does not give those out. Its String and
// GoString never show the token.
type Token struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresAt   string `json:"expires_at,omitempty"`
	IDToken     string `json:"id_token,omitempty"`
	// IssuedTokenType is a derived token's RFC 8693 issued_token_type; "" for the credential's own.
	IssuedTokenType string `json:"issued_token_type,omitempty"`
	// Scopes are a derived token's scopes; nil for the credential's own.
	Scopes []string `json:"scopes,omitempty"`
}

// Authorization is the Authorization header's value: "Bearer <token>".
func (t Token) Authorization() string { return t.TokenType + " " + t.AccessToken }

func (t Token) String() string {
	// A derived token's type and scopes say what it is for, not what it is: shown when there.
	derived := ""
	if t.IssuedTokenType != "" || t.Scopes != nil {
		derived = fmt.Sprintf(", issued_token_type: %s, scopes: %q", t.IssuedTokenType, t.Scopes)
	}
	return fmt.Sprintf("Token{type: %s, expires_at: %s%s, redacted}", t.TokenType, t.ExpiresAt, derived)
}

func (t Token) GoString() string { return t.String() }

// Format prints String for every verb (%d, %x and the rest would print the fields).
func (t Token) Format(state fmt.State, _ rune) { _, _ = fmt.Fprint(state, t.String()) }

// Credential is a credential's metadata: never a secret.
type Credential struct {
	ID                    string            `json:"id"`
	Namespace             string            `json:"namespace"`
	Name                  string            `json:"name"`
	Provider              string            `json:"provider"`
	Kind                  string            `json:"kind"`
	Subject               string            `json:"subject,omitempty"`
	Status                string            `json:"status"`
	Generation            int64             `json:"generation"`
	TokenType             string            `json:"token_type,omitempty"`
	Scopes                []string          `json:"scopes"`
	Labels                map[string]string `json:"labels"`
	IssuedAt              string            `json:"issued_at"`
	ExpiresAt             string            `json:"expires_at,omitempty"`
	RefreshAt             string            `json:"refresh_at,omitempty"`
	RefreshTokenExpiresAt string            `json:"refresh_token_expires_at,omitempty"`
	HasRefreshToken       bool              `json:"has_refresh_token"`
	HasIDToken            bool              `json:"has_id_token"`
	LastError             *LastError        `json:"last_error,omitempty"`
	RefreshFailures       int               `json:"refresh_failures,omitempty"`
	CreatedAt             string            `json:"created_at"`
	UpdatedAt             string            `json:"updated_at"`
	PendingCommit         *PendingCommit    `json:"pending_commit,omitempty"`
	// Grant is nil unless the daemon obtains and renews the credential itself.
	Grant *Grant `json:"grant,omitempty"`
}

// LastError is the last refresh failure.
type LastError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	At      string `json:"at"`
}

// PendingCommit: a provider answer the database has not taken yet.
type PendingCommit struct {
	Since         string `json:"since"`
	Failures      int    `json:"failures"`
	LastError     string `json:"last_error"`
	NextAttemptAt string `json:"next_attempt_at"`
}

// Grant is how the daemon obtains and renews a credential itself: Type "client_credentials" or
// "token_exchange" (then Subject is the credential whose access token it exchanges).
type Grant struct {
	Type               string   `json:"type"`
	Scopes             []string `json:"scopes"`
	Audience           []string `json:"audience"`
	Resource           []string `json:"resource"`
	Subject            string   `json:"subject,omitempty"`
	RequestedTokenType string   `json:"requested_token_type,omitempty"`
}

// Page is one page of a listing; pass NextCursor for the next ("" after the last).
type Page struct {
	Items      []Credential `json:"items"`
	NextCursor string       `json:"next_cursor"`
}

// Event is one line of /v1/events: stored, refreshed, refresh_failed, status_changed, deleted,
// authorized or authorization_failed (a device sign-in's end; Status is empty and Generation 0
// when it failed for a credential that does not exist, and Error.Code says why).
type Event struct {
	Type         string     `json:"type"`
	CredentialID string     `json:"credential_id"`
	At           string     `json:"at"`
	Status       string     `json:"status"`
	Generation   int64      `json:"generation"`
	Error        *LastError `json:"error,omitempty"`
}

// Deleted says what Delete did. RevocationPending: the provider did not confirm revocation, the
// credential is revoke_pending (Credential) and the daemon keeps trying; otherwise it is gone and
// Revoked says whether the provider confirmed revocation (false also without a revocation
// endpoint, or with force; nil only from a daemon that does not say).
type Deleted struct {
	RevocationPending bool
	Revoked           *bool
	Credential        *Credential
}

// Exchanged is a redeemed code: the stored credential, its access token, and whether it was created.
type Exchanged struct {
	Credential Credential `json:"credential"`
	Token      Token      `json:"token"`
	Created    bool       `json:"-"`
}

// ExchangeRequest is what Exchange sends: a one-time code with its PKCE verifier.
type ExchangeRequest struct {
	Provider     string            `json:"provider"`
	Code         string            `json:"code"`
	CodeVerifier string            `json:"code_verifier"`
	RedirectURI  string            `json:"redirect_uri"`
	Nonce        string            `json:"nonce,omitempty"`
	State        string            `json:"state,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
}

// TokenExchangeRequest is what ExchangeToken asks the provider for: at least one of Audience,
// Resource and Scopes. The subject is always the credential's stored access token: the refresh
// token never leaves the vault for an exchange. The daemon treats lists as sets: the same members
// in another order, or repeated, is the same request.
type TokenExchangeRequest struct {
	// Audience is RFC 8693 audience, one or several.
	Audience []string `json:"audience,omitempty"`
	// Resource is RFC 8707 resource, one or several.
	Resource []string `json:"resource,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
	// RequestedTokenType is a token type URN ("" lets the provider choose).
	RequestedTokenType string `json:"requested_token_type,omitempty"`
}

// SignInRequest is what StartSignIn sends: where the person comes back to and what to ask for.
// Mode "parameters" answers the request's parameters for a mobile SDK instead of a URL; mode
// "device" a user code while the daemon polls (no RedirectURI). Labels nil keeps those of a
// credential being repaired (an empty map clears them).
type SignInRequest struct {
	Provider    string            `json:"provider"`
	RedirectURI string            `json:"redirect_uri,omitempty"`
	Scopes      []string          `json:"scopes,omitempty"`
	LoginHint   string            `json:"login_hint,omitempty"`
	Prompt      string            `json:"prompt,omitempty"`
	Resources   []string          `json:"resources,omitempty"`
	Parameters  map[string]string `json:"parameters,omitempty"`
	Labels      map[string]string `json:"labels"`
	Mode        string            `json:"mode,omitempty"`
}

// SignIn is a started sign-in: the URL to send the person to, or the request's parameters
// (a name given twice, such as resource, as an array), and when it must be finished by.
// Mode "device": the code the person enters at VerificationURI, and the seconds between polls.
type SignIn struct {
	AuthorizationURL        string         `json:"authorization_url,omitempty"`
	Parameters              map[string]any `json:"parameters,omitempty"`
	ExpiresAt               string         `json:"expires_at"`
	Pushed                  bool           `json:"pushed"`
	UserCode                string         `json:"user_code,omitempty"`
	VerificationURI         string         `json:"verification_uri,omitempty"`
	VerificationURIComplete string         `json:"verification_uri_complete,omitempty"`
	Interval                int            `json:"interval,omitempty"`
}

// SignInStatus is GET …/authorization: the caller's device sign-ins the daemon still polls for
// the credential, and how the caller's last sign-in into it ended (nil: none found).
type SignInStatus struct {
	Pending []PendingSignIn `json:"pending"`
	Last    *EndedSignIn    `json:"last,omitempty"`
}

// PendingSignIn is a device sign-in the daemon polls for.
type PendingSignIn struct {
	Kind       string `json:"kind"`
	Provider   string `json:"provider"`
	StartedAt  string `json:"started_at"`
	ExpiresAt  string `json:"expires_at"`
	NextPollAt string `json:"next_poll_at"`
	Interval   int    `json:"interval"`
}

// EndedSignIn is how a sign-in ended: Outcome "authorized", or "failed" with the Reason.
type EndedSignIn struct {
	At      string `json:"at"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// UsableCredential is a credential the caller may use through the proxy, and where.
type UsableCredential struct {
	ID          string   `json:"id"`
	Provider    string   `json:"provider"`
	Status      string   `json:"status"`
	APIBaseURLs []string `json:"api_base_urls"`
}

// ListOptions filters and pages List.
type ListOptions struct {
	Namespace string
	Status    string
	Cursor    string
	// Limit is 1-500; 0 leaves the daemon's default (100).
	Limit int
}
