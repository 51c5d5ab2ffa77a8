package tokenvault_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	tokenvault "tokenvault.dev/client"
)

const accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

// setUpExchange is a daemon whose instance authlib is the Authlib server, and credential
// payments/alice holding an access token that server issued (client credentials, scopes profile
// and email) and still honours: the subject of the exchanges. It answers the stored token.
func setUpExchange(t *testing.T) (*authlib, *tokenvault.Client, context.Context, string) {
	server := startAuthlib(t)
	d := startDaemonWith(t, newProvider(t), "", fmt.Sprintf(
		`"authlib": {"kind": "oauth2", "issuer": %q, "client_id": "vault-client", "client_secret_file": "$SECRET"}`,
		server.issuer))
	vault := tokenvault.New(d.socket)
	t.Cleanup(vault.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	own := server.clientCredentials(t, "profile email")
	token := fmt.Sprintf(`{"access_token": %q, "token_type": "Bearer", "expires_in": 3600}`, own)
	if _, created, err := vault.Put(ctx, "payments/alice", "authlib", []byte(token), nil); err != nil || !created {
		t.Fatalf("put: created %v, %v", created, err)
	}
	return server, vault, ctx, own
}

func sorted(values []string) string {
	copied := append([]string(nil), values...)
	sort.Strings(copied)
	return strings.Join(copied, " ")
}

func TestExchangeTokenDerivesATokenOncePerRequest(t *testing.T) {
	server, vault, ctx, own := setUpExchange(t)
	if token, err := vault.Token(ctx, "payments/alice", 0); err != nil || token.AccessToken != own {
		t.Fatalf("the stored token: %v", err)
	}
	derived, err := vault.ExchangeToken(ctx, "payments/alice", tokenvault.TokenExchangeRequest{
		Audience: []string{"api.example", "reports.example"}, Scopes: []string{"profile", "email"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if derived.AccessToken == "" || derived.AccessToken == own || derived.TokenType != "Bearer" ||
		derived.IssuedTokenType != accessTokenType || sorted(derived.Scopes) != "email profile" || derived.ExpiresAt == "" {
		t.Fatalf("derived: %v (the same as the stored token: %v)", derived, derived.AccessToken == own)
	}
	shown := fmt.Sprintf("%v %+v %#v %s %d %x %q", derived, derived, derived, derived, derived, derived, derived)
	if strings.Contains(shown, derived.AccessToken) || !strings.Contains(shown, accessTokenType) {
		t.Fatalf("a formatted derived token: %s", shown)
	}

	// The same request, its lists in another order: from the daemon's memory.
	again, err := vault.ExchangeToken(ctx, "payments/alice", tokenvault.TokenExchangeRequest{
		Audience: []string{"reports.example", "api.example"}, Scopes: []string{"email", "profile"},
	})
	if err != nil || again.AccessToken != derived.AccessToken {
		t.Fatalf("again: another token or %v", err)
	}
	requests := server.exchanges(t)
	if len(requests) != 1 {
		t.Fatalf("the server was asked %d times: %v", len(requests), requests)
	}
	audience, _ := requests[0]["audience"].([]any)
	scope, _ := requests[0]["scope"].(string)
	if fmt.Sprint(audience) != "[api.example reports.example]" && fmt.Sprint(audience) != "[reports.example api.example]" ||
		sorted(strings.Fields(scope)) != "email profile" || requests[0]["subject_token_type"] != accessTokenType {
		t.Fatalf("the server got %v", requests[0])
	}

	// Another audience is another request; the credential's own token is as it was.
	single, err := vault.ExchangeToken(ctx, "payments/alice", tokenvault.TokenExchangeRequest{Audience: []string{"api.example"}})
	if err != nil || single.AccessToken == derived.AccessToken || single.AccessToken == own || len(server.exchanges(t)) != 2 {
		t.Fatalf("single audience: %v, %v", single, err)
	}
	if token, err := vault.Token(ctx, "payments/alice", 0); err != nil || token.AccessToken != own || token.Scopes != nil {
		t.Fatalf("the stored token after the exchanges: %v, %v", token, err)
	}
}

func TestExchangeTokenRefusalsAreProblems(t *testing.T) {
	server, vault, ctx, own := setUpExchange(t)
	_, err := vault.ExchangeToken(ctx, "payments/alice", tokenvault.TokenExchangeRequest{Audience: []string{"evil.example"}})
	var problem *tokenvault.Problem
	if !errors.As(err, &problem) || problem.Code != tokenvault.CodeProviderRejected || problem.Status != 422 ||
		!strings.Contains(problem.Detail, "invalid_target") {
		t.Fatalf("evil.example: %v", err)
	}
	if requests := server.exchanges(t); len(requests) != 0 {
		t.Fatalf("a refused exchange was recorded as issued: %v", requests)
	}
	if shown, err := vault.Show(ctx, "payments/alice"); err != nil || shown.Generation != 1 || shown.LastError != nil {
		t.Fatalf("a refused exchange changed the credential: %+v, %v", shown, err)
	}
	// Neither an audience, a resource nor scopes: the derived token would be the credential's own.
	_, err = vault.ExchangeToken(ctx, "payments/alice", tokenvault.TokenExchangeRequest{})
	if !errors.As(err, &problem) || problem.Code != tokenvault.CodeInvalidField || problem.Status != 400 || problem.Field != "audience" {
		t.Fatalf("a request for nothing: %v", err)
	}
	if _, err := vault.ExchangeToken(ctx, "payments/nobody", tokenvault.TokenExchangeRequest{Audience: []string{"api.example"}}); !tokenvault.HasCode(err, tokenvault.CodeCredentialNotFound) {
		t.Fatalf("an unknown credential: %v", err)
	}
	if strings.Contains(fmt.Sprint(err), own) {
		t.Fatal("a problem shows the stored token")
	}
}
