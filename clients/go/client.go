// Package tokenvault is a client for the TokenVault daemon's local API over its Unix socket,
// standard library only. The daemon decides what a caller may do by its uid and groups, so the
// client has no credentials of its own. Ids are "namespace/name".
package tokenvault

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Client talks to one daemon. Safe for concurrent use.
type Client struct {
	SocketPath string
	http       *http.Client
}

// New is a client of the daemon on socketPath ("" for DefaultSocketPath). Deadlines come from
// each call's context.
func New(socketPath string) *Client {
	if socketPath == "" {
		socketPath = DefaultSocketPath()
	}
	return &Client{
		SocketPath: socketPath,
		http:       &http.Client{Transport: unixTransport(socketPath), CheckRedirect: noRedirects},
	}
}

// Close closes the kept connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Health is GET /v1/health: "status" (ok or degraded), the database, providers and courier.
func (c *Client) Health(ctx context.Context) (map[string]any, error) {
	var document map[string]any
	answer, err := c.send(ctx, http.MethodGet, "/v1/health", nil, nil)
	if err == nil {
		err = answer.decode(&document)
	}
	return document, err
}

// Put stores or replaces a credential and says whether it was created. token is the token
// response exactly as the provider or SDK gave it, a JSON object, passed on untouched so the
// daemon seals every field.
func (c *Client) Put(
	ctx context.Context, id, provider string, token []byte, labels map[string]string,
) (Credential, bool, error) {
	var credential Credential
	path, err := credentialPath(id, "")
	if err != nil {
		return credential, false, err
	}
	trimmed := bytes.TrimSpace(token)
	if len(trimmed) < 2 || trimmed[0] != '{' || trimmed[len(trimmed)-1] != '}' {
		return credential, false, fmt.Errorf(
			"tokenvault: the token must be a JSON object (the token response as the provider or SDK gave it)")
	}
	if labels == nil {
		labels = map[string]string{}
	}
	// The token goes in as received (json.Marshal would re-encode it): the daemon validates it
	// and answers invalid_payload with the field at fault.
	head, err := json.Marshal(struct {
		Provider string            `json:"provider"`
		Labels   map[string]string `json:"labels"`
	}{provider, labels})
	if err != nil {
		return credential, false, fmt.Errorf("tokenvault: %w", err)
	}
	body := append(append(append(head[:len(head)-1:len(head)-1], `,"token":`...), trimmed...), '}')
	answer, err := c.send(ctx, http.MethodPut, path, nil, body, http.StatusOK, http.StatusCreated)
	if err == nil {
		err = answer.decode(&credential)
	}
	return credential, answer.status == http.StatusCreated, err
}

// Show is the credential's metadata; never a secret.
func (c *Client) Show(ctx context.Context, id string) (Credential, error) {
	return c.credential(ctx, http.MethodGet, id, "")
}

// credential sends method to the credential's route with suffix and reads the metadata it answers.
func (c *Client) credential(ctx context.Context, method, id, suffix string) (Credential, error) {
	var credential Credential
	path, err := credentialPath(id, suffix)
	if err != nil {
		return credential, err
	}
	answer, err := c.send(ctx, method, path, nil, nil)
	if err == nil {
		err = answer.decode(&credential)
	}
	return credential, err
}

// Token is the current access token. minTTL (0: none) is how long it must stay valid: the daemon
// refreshes first when it would not, or answers a Problem (token_expired, min_ttl_unreachable).
func (c *Client) Token(ctx context.Context, id string, minTTL time.Duration) (Token, error) {
	var token Token
	path, err := credentialPath(id, "/token")
	if err != nil {
		return token, err
	}
	query := url.Values{}
	if minTTL > 0 {
		query.Set("min_ttl", strconv.FormatFloat(minTTL.Seconds(), 'f', -1, 64))
	}
	answer, err := c.send(ctx, http.MethodGet, path, query, nil)
	if err == nil {
		err = answer.decode(&token)
	}
	return token, err
}

// ExchangeToken is a token the provider derives from the credential's by RFC 8693 token exchange
// (for another audience or resource, narrower scopes), so a downstream API gets a token meant for
// it while the credential's own never leaves the daemon. The daemon answers the same request from
// memory while the derived token lives. The provider's refusal is a Problem with code
// provider_rejected and the OAuth error (invalid_target, invalid_scope) in Detail.
func (c *Client) ExchangeToken(ctx context.Context, id string, request TokenExchangeRequest) (Token, error) {
	var token Token
	path, err := credentialPath(id, "/token-exchange")
	if err != nil {
		return token, err
	}
	answer, err := c.send(ctx, http.MethodPost, path, nil, request)
	if err == nil {
		err = answer.decode(&token)
	}
	return token, err
}

// List is one page of metadata, ordered by id.
func (c *Client) List(ctx context.Context, options ListOptions) (Page, error) {
	var page Page
	query := url.Values{}
	for name, value := range map[string]string{
		"namespace": options.Namespace, "status": options.Status, "cursor": options.Cursor,
	} {
		if value != "" {
			query.Set(name, value)
		}
	}
	if options.Limit != 0 {
		query.Set("limit", strconv.Itoa(options.Limit))
	}
	answer, err := c.send(ctx, http.MethodGet, "/v1/credentials", query, nil)
	if err == nil {
		err = answer.decode(&page)
	}
	return page, err
}

// ListAll is every matching credential, following cursors (500 per request).
func (c *Client) ListAll(ctx context.Context, namespace, status string) ([]Credential, error) {
	return allPages(func(cursor string) ([]Credential, string, error) {
		page, err := c.List(ctx, ListOptions{Namespace: namespace, Status: status, Cursor: cursor, Limit: 500})
		return page.Items, page.NextCursor, err
	})
}

// Delete revokes the tokens at the provider (when it has a revocation endpoint), then deletes.
// force: delete even when revocation fails.
func (c *Client) Delete(ctx context.Context, id string, force bool) (Deleted, error) {
	path, err := credentialPath(id, "")
	if err != nil {
		return Deleted{}, err
	}
	query := url.Values{}
	if force {
		query.Set("force", "true")
	}
	answer, err := c.send(ctx, http.MethodDelete, path, query, nil, http.StatusAccepted, http.StatusNoContent)
	if err != nil {
		return Deleted{}, err
	}
	if answer.status == http.StatusAccepted {
		var credential Credential
		err = answer.decode(&credential)
		return Deleted{RevocationPending: true, Credential: &credential}, err
	}
	deleted := Deleted{}
	if value := answer.header.Get("TokenVault-Revoked"); value != "" {
		revoked := value == "true"
		deleted.Revoked = &revoked
	}
	return deleted, nil
}

// Refresh refreshes now (at most once per credential every limits.on_demand_refresh_seconds).
func (c *Client) Refresh(ctx context.Context, id string) (Credential, error) {
	return c.credential(ctx, http.MethodPost, id, "/refresh")
}

// Exchange has the daemon redeem a one-time code with its PKCE verifier at a provider instance,
// check the id token and store the result. Never returns the refresh token.
func (c *Client) Exchange(ctx context.Context, id string, request ExchangeRequest) (Exchanged, error) {
	var exchanged Exchanged
	path, err := credentialPath(id, "/exchange")
	if err != nil {
		return exchanged, err
	}
	answer, err := c.send(ctx, http.MethodPost, path, nil, request, http.StatusOK, http.StatusCreated)
	if err == nil {
		err = answer.decode(&exchanged)
		exchanged.Created = answer.status == http.StatusCreated
	}
	return exchanged, err
}

// StartSignIn has the daemon start a sign-in at request.Provider that finishes into id: it makes
// and keeps the state, PKCE verifier and nonce, and answers the authorization URL (or the
// parameters, for a mobile SDK).
func (c *Client) StartSignIn(ctx context.Context, id string, request SignInRequest) (SignIn, error) {
	var started SignIn
	path, err := credentialPath(id, "/authorization")
	if err != nil {
		return started, err
	}
	answer, err := c.send(ctx, http.MethodPost, path, nil, request, http.StatusCreated)
	if err == nil {
		err = answer.decode(&started)
	}
	return started, err
}

// SignInStatus answers the caller's device sign-ins waiting for id, and how the caller's last
// sign-in into it ended.
func (c *Client) SignInStatus(ctx context.Context, id string) (SignInStatus, error) {
	var status SignInStatus
	path, err := credentialPath(id, "/authorization")
	if err != nil {
		return status, err
	}
	answer, err := c.send(ctx, http.MethodGet, path, nil, nil, http.StatusOK)
	if err == nil {
		err = answer.decode(&status)
	}
	return status, err
}

// FinishSignIn finishes the sign-in the callback's state names with the whole URL the
// authorization server redirected to; the daemon redeems the code and stores (or repairs) the
// credential. It returns the metadata, never a token; created says whether it is new.
func (c *Client) FinishSignIn(ctx context.Context, id, callbackURL string) (credential Credential, created bool, err error) {
	path, err := credentialPath(id, "/authorization/callback")
	if err != nil {
		return credential, false, err
	}
	body := map[string]string{"callback_url": callbackURL}
	answer, err := c.send(ctx, http.MethodPost, path, nil, body, http.StatusOK, http.StatusCreated)
	if err == nil {
		err = answer.decode(&credential)
		created = answer.status == http.StatusCreated
	}
	return credential, created, err
}

// Watch streams the credential's metadata now, then again on every change, until it is deleted,
// the daemon stops, or ctx ends.
func (c *Client) Watch(ctx context.Context, id string) (*Stream[Credential], error) {
	path, err := credentialPath(id, "/watch")
	if err != nil {
		return nil, err
	}
	return openStream[Credential](ctx, c, path)
}

// Events streams every change to the credentials the caller may list, from now on.
func (c *Client) Events(ctx context.Context) (*Stream[Event], error) {
	return openStream[Event](ctx, c, "/v1/events")
}

// UsableCredentials is every credential this process may use through the proxy, and where.
func (c *Client) UsableCredentials(ctx context.Context, namespace string) ([]UsableCredential, error) {
	return allPages(func(cursor string) ([]UsableCredential, string, error) {
		query := url.Values{"limit": {"500"}}
		for name, value := range map[string]string{"namespace": namespace, "cursor": cursor} {
			if value != "" {
				query.Set(name, value)
			}
		}
		var page struct {
			Items      []UsableCredential `json:"items"`
			NextCursor string             `json:"next_cursor"`
		}
		answer, err := c.send(ctx, http.MethodGet, "/v1/proxy/credentials", query, nil)
		if err == nil {
			err = answer.decode(&page)
		}
		return page.Items, page.NextCursor, err
	})
}
