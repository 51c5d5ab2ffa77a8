package tokenvault_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tokenvault "tokenvault.dev/client"
)

func setUp(t *testing.T) (*provider, *daemon, *tokenvault.Client, context.Context) {
	p := newProvider(t)
	d := startDaemon(t, p)
	vault := tokenvault.New(d.socket)
	t.Cleanup(vault.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return p, d, vault, ctx
}

func put(t *testing.T, ctx context.Context, vault *tokenvault.Client, p *provider, id string) tokenvault.Credential {
	t.Helper()
	credential, created, err := vault.Put(ctx, id, "idp", p.issue(), map[string]string{"env": "dev"})
	if err != nil || !created {
		t.Fatalf("put %s: created %v, %v", id, created, err)
	}
	return credential
}

// walkThrough is README.md's Go lines, between the markers (TestReadmeWalkThrough compares them).
func walkThrough(ctx context.Context) error {
	// README begin
	vault := tokenvault.New(".tokenvault/run/tokenvault.sock") // or "" for $TOKENVAULT_SOCKET
	token := []byte(`{"access_token":"at-3","refresh_token":"rt-3","expires_in":3600}`)
	if _, _, err := vault.Put(ctx, "payments/dave", "oauth2", token, nil); err != nil {
		return err
	}
	access, err := vault.Token(ctx, "payments/dave", time.Minute) // errors.As(err, &problem) for its code
	fmt.Println(access.Authorization(), err)                      // Bearer at-3 <nil>
	// README end
	return nil
}

func TestReadmeWalkThrough(t *testing.T) {
	_, d, _, ctx := setUp(t)
	readme, err := os.ReadFile(filepath.Join(repository, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)[strings.Index(string(readme), "From Go, with the standard-library client"):]
	block := section[strings.Index(section, "```go\n")+6:]
	block = block[:strings.Index(block, "```")]
	source, err := os.ReadFile("client_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := string(source)[strings.Index(string(source), "// README begin")+len("// README begin"):]
	lines = lines[:strings.Index(lines, "// README end")]
	squash := regexp.MustCompile(`\s+`)
	if squash.ReplaceAllString(block, "") != squash.ReplaceAllString(lines, "") {
		t.Fatalf("README.md's Go lines differ from walkThrough's:\n%s\n---\n%s", block, lines)
	}
	// Run from a directory whose .tokenvault/run/tokenvault.sock is the test daemon's socket.
	directory := t.TempDir()
	if err := os.MkdirAll(filepath.Join(directory, ".tokenvault", "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(d.socket, filepath.Join(directory, ".tokenvault", "run", "tokenvault.sock")); err != nil {
		t.Fatal(err)
	}
	working, _ := os.Getwd()
	_ = os.Chdir(directory)
	defer func() { _ = os.Chdir(working) }()
	reader, writer, _ := os.Pipe()
	stdout := os.Stdout
	os.Stdout = writer
	err = walkThrough(ctx)
	os.Stdout = stdout
	writer.Close()
	printed, _ := io.ReadAll(reader)
	if err != nil || string(printed) != "Bearer at-3 <nil>\n" {
		t.Fatalf("walk-through: %v, printed %q", err, printed)
	}
}

func TestStoreReadListRefreshAndDelete(t *testing.T) {
	p, _, vault, ctx := setUp(t)
	stored := put(t, ctx, vault, p, "payments/alice")
	if stored.ID != "payments/alice" || stored.Provider != "idp" || stored.Status != "active" ||
		stored.Labels["env"] != "dev" || !stored.HasRefreshToken {
		t.Fatalf("stored: %+v", stored)
	}
	token, err := vault.Token(ctx, "payments/alice", time.Minute)
	access, _ := p.current()
	if err != nil || token.AccessToken != access {
		t.Fatalf("token: %v", err)
	}
	if strings.Contains(fmt.Sprintf("%v %+v %#v %s %d %x %q", token, token, token, token, token, token, token), access) {
		t.Fatal("a formatted token shows the token")
	}
	if _, created, err := vault.Put(ctx, "payments/alice", "idp", []byte(`{"access_token":"x","expires_in":600}`), nil); err != nil || created {
		t.Fatalf("replace: created %v, %v", created, err)
	}
	put(t, ctx, vault, p, "payments/bob")
	page, err := vault.List(ctx, tokenvault.ListOptions{Namespace: "payments", Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != "payments/alice" || page.NextCursor == "" {
		t.Fatalf("page: %+v, %v", page, err)
	}
	all, err := vault.ListAll(ctx, "", "")
	if err != nil || len(all) != 2 || all[1].ID != "payments/bob" {
		t.Fatalf("all: %+v, %v", all, err)
	}
	time.Sleep(1100 * time.Millisecond) // limits.on_demand_refresh_seconds (1 here) since the put
	refreshed, err := vault.Refresh(ctx, "payments/bob")
	if err != nil || refreshed.Generation < 2 {
		t.Fatalf("refresh: %+v, %v", refreshed, err)
	}
	if token, err := vault.Token(ctx, "payments/bob", 1500*time.Millisecond); err != nil {
		t.Fatalf("token after refresh: %v", err)
	} else if latest, _ := p.current(); token.AccessToken != latest {
		t.Fatal("the token after the refresh is not the one the provider issued last")
	}
	deleted, err := vault.Delete(ctx, "payments/bob", false)
	if err != nil || deleted.RevocationPending || deleted.Revoked == nil || *deleted.Revoked {
		t.Fatalf("delete (idp has no revocation endpoint: nothing revoked): %+v, %v", deleted, err)
	}
	_, err = vault.Show(ctx, "payments/bob")
	var problem *tokenvault.Problem
	if !errors.As(err, &problem) || problem.Code != tokenvault.CodeCredentialNotFound || problem.Status != 404 {
		t.Fatalf("show after delete: %v", err)
	}
}

func TestExchangeRedeemsACode(t *testing.T) {
	p, _, vault, ctx := setUp(t)
	exchanged, err := vault.Exchange(ctx, "payments/carol", tokenvault.ExchangeRequest{
		Provider: "idp", Code: "one-time", CodeVerifier: strings.Repeat("v", 43), RedirectURI: "https://app.example/cb",
	})
	access, _ := p.current()
	if err != nil || !exchanged.Created || exchanged.Token.AccessToken != access || !exchanged.Credential.HasRefreshToken {
		t.Fatalf("exchange: %v", err)
	}
	if strings.Contains(fmt.Sprintf("%v %+v %#v", exchanged, exchanged, exchanged), access) {
		t.Fatal("a formatted exchange result shows the token")
	}
}

func TestASignInIsStartedAndFinishedOnce(t *testing.T) {
	_, _, vault, ctx := setUp(t)
	started, err := vault.StartSignIn(ctx, "people/gina", tokenvault.SignInRequest{
		Provider: "idp", RedirectURI: "https://app.example/cb", Scopes: []string{"profile"},
		Labels: map[string]string{"via": "go"},
	})
	if err != nil || started.Pushed || started.ExpiresAt == "" {
		t.Fatalf("start: %+v %v", started, err)
	}
	parsed, err := url.Parse(started.AuthorizationURL)
	if err != nil || parsed.Path != "/authorize" || parsed.Query().Get("code_challenge_method") != "S256" {
		t.Fatalf("authorization URL %q: %v", started.AuthorizationURL, err)
	}
	callback := "https://app.example/cb?code=one-time&state=" + url.QueryEscape(parsed.Query().Get("state"))
	credential, created, err := vault.FinishSignIn(ctx, "people/gina", callback)
	if err != nil || !created || credential.ID != "people/gina" || credential.Labels["via"] != "go" {
		t.Fatalf("finish: %+v %v", credential, err)
	}
	_, _, err = vault.FinishSignIn(ctx, "people/gina", callback)
	var problem *tokenvault.Problem
	if !errors.As(err, &problem) || problem.Code != tokenvault.CodeAuthorizationUnknown || problem.Status != 404 {
		t.Fatalf("a spent state: %v", err)
	}
	parameters, err := vault.StartSignIn(ctx, "people/gina", tokenvault.SignInRequest{
		Provider: "idp", RedirectURI: "https://app.example/cb", Mode: "parameters",
	})
	if err != nil || parameters.AuthorizationURL != "" || parameters.Parameters["client_id"] != "vault-client" {
		t.Fatalf("parameters: %+v %v", parameters, err)
	}
}

func TestADeviceSignInIsPolledByTheDaemon(t *testing.T) {
	_, _, vault, ctx := setUp(t)
	started, err := vault.StartSignIn(ctx, "people/hana", tokenvault.SignInRequest{
		Provider: "idp", Scopes: []string{"profile"}, Mode: "device",
	})
	if err != nil || started.UserCode != "WDJB-MJHT" || started.Interval != 1 || started.AuthorizationURL != "" {
		t.Fatalf("start: %+v %v", started, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	status, err := vault.SignInStatus(ctx, "people/hana")
	for err == nil && len(status.Pending) > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		status, err = vault.SignInStatus(ctx, "people/hana")
	}
	if err != nil || status.Last == nil || status.Last.Outcome != "authorized" {
		t.Fatalf("status: %+v %v", status, err)
	}
	if credential, err := vault.Show(ctx, "people/hana"); err != nil || !credential.HasRefreshToken {
		t.Fatalf("show: %+v %v", credential, err)
	}
}

func TestWatchAndEventsFollowARefreshAndADelete(t *testing.T) {
	p, _, vault, ctx := setUp(t)
	put(t, ctx, vault, p, "payments/alice")
	time.Sleep(1100 * time.Millisecond)
	if _, err := vault.Watch(ctx, "payments/nobody"); !tokenvault.HasCode(err, tokenvault.CodeCredentialNotFound) {
		t.Fatalf("the watch of no credential: %v", err)
	}
	watch, err := vault.Watch(ctx, "payments/alice")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	events, err := vault.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	if first, err := watch.Next(); err != nil || first.ID != "payments/alice" {
		t.Fatalf("first: %+v, %v", first, err)
	}
	refreshed, err := vault.Refresh(ctx, "payments/alice")
	if err != nil {
		t.Fatal(err)
	}
	if next, err := watch.Next(); err != nil || next.Generation != refreshed.Generation {
		t.Fatalf("after refresh: %+v, %v", next, err)
	}
	if event, err := events.Next(); err != nil || event.Type != "refreshed" || event.Generation != refreshed.Generation {
		t.Fatalf("event: %+v, %v", event, err)
	}
	if _, err := vault.Delete(ctx, "payments/alice", false); err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Next(); err != io.EOF {
		t.Fatalf("the watch of a deleted credential: %v, want io.EOF", err)
	}
	if event, err := events.Next(); err != nil || event.Type != "deleted" {
		t.Fatalf("event: %+v, %v", event, err)
	}
	// Closed from another goroutine while Next waits: io.EOF, not a broken stream.
	ended := make(chan error, 1)
	go func() { _, err := events.Next(); ended <- err }()
	time.Sleep(200 * time.Millisecond)
	events.Close()
	expectEnded(t, ended, 1, 5*time.Second, "closed from another goroutine")
}

// expectEnded waits for count streams' Next to return io.EOF, within the time given.
func expectEnded(t *testing.T, ended <-chan error, count int, within time.Duration, why string) {
	t.Helper()
	for i := 0; i < count; i++ {
		select {
		case err := <-ended:
			if err != io.EOF {
				t.Fatalf("a stream %s ended with %v, want io.EOF", why, err)
			}
		case <-time.After(within):
			t.Fatalf("a stream %s did not end within %v", why, within)
		}
	}
}

func TestStreamsEndWhenTheDaemonStops(t *testing.T) {
	p, d, vault, ctx := setUp(t)
	put(t, ctx, vault, p, "payments/alice")
	watch, err := vault.Watch(ctx, "payments/alice")
	if err != nil {
		t.Fatal(err)
	}
	events, err := vault.Events(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Next(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 2)
	go func() { _, err := watch.Next(); ended <- err }()
	go func() { _, err := events.Next(); ended <- err }()
	time.Sleep(300 * time.Millisecond)
	d.stop()
	expectEnded(t, ended, 2, 15*time.Second, "of a daemon that stopped")
}

func TestCallsThroughTheProxyNeverSeeTheToken(t *testing.T) {
	p, _, vault, ctx := setUp(t)
	put(t, ctx, vault, p, "payments/alice")
	answer, err := vault.Call(ctx, "payments/alice", "GET", "/hello", http.Header{"Authorization": {"Bearer mine"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(answer.Body)
	answer.Body.Close()
	if answer.StatusCode != 200 || string(body) != "hello from the api\n" {
		t.Fatalf("call: %d %q", answer.StatusCode, body)
	}
	if answer.Refreshed {
		t.Fatal("a call with a valid token was reported refreshed")
	}
	redirect, err := vault.Call(ctx, "payments/alice", "GET", "/redirect", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	redirect.Body.Close()
	if redirect.StatusCode != http.StatusFound || redirect.Header.Get("Location") != "/v1/credentials/payments/alice/token" {
		t.Fatalf("a redirect was followed or changed: %d %q", redirect.StatusCode, redirect.Header.Get("Location"))
	}
	usable, err := vault.UsableCredentials(ctx, "")
	if err != nil || len(usable) != 1 || usable[0].APIBaseURLs[0] != p.server.URL+"/api" {
		t.Fatalf("usable: %+v, %v", usable, err)
	}
	_, refused := vault.Call(ctx, "payments/alice", "GET", "https://elsewhere.example/", nil, nil)
	if !tokenvault.HasCode(refused, tokenvault.CodeUpstreamNotAllowed) {
		t.Fatalf("a base not allowed: %v", refused)
	}
	shown := fmt.Sprintf("%v %v %v", answer.Header, usable, refused)
	_, issued := p.current()
	for _, token := range issued {
		if strings.Contains(shown, token) {
			t.Fatal("a token is in what the caller was shown")
		}
	}
}

func TestProblemsCarryTheirCodeAndField(t *testing.T) {
	p, _, vault, ctx := setUp(t)
	put(t, ctx, vault, p, "payments/alice")
	cases := []struct {
		call        func() error
		code, field string
		status      int
	}{
		{func() error { _, err := vault.Show(ctx, "payments/nobody"); return err }, "credential_not_found", "", 404},
		{func() error {
			_, _, err := vault.Put(ctx, "payments/x", "no-such-provider", []byte(`{"access_token":"a"}`), nil)
			return err
		}, "unknown_provider", "", 422},
		{func() error {
			_, _, err := vault.Put(ctx, "payments/x", "idp", []byte(`{"access_token": }`), nil)
			return err
		},
			"invalid_payload", "", 400},
		{func() error {
			_, _, err := vault.Put(ctx, "payments/x", "idp", []byte(`{"access_token": 7}`), nil)
			return err
		},
			"invalid_field", "token.access_token", 400},
		{func() error { _, err := vault.List(ctx, tokenvault.ListOptions{Limit: 100000}); return err }, "invalid_field", "limit", 400},
		{func() error { _, err := vault.Token(ctx, "payments/alice", 24*time.Hour); return err }, "", "", 409},
	}
	for i, c := range cases {
		err := c.call()
		var problem *tokenvault.Problem
		if !errors.As(err, &problem) {
			t.Fatalf("case %d: %v is not a Problem", i, err)
		}
		if (c.code != "" && problem.Code != c.code) || problem.Field != c.field || problem.Status != c.status ||
			tokenvault.CodeStatus[problem.Code] != problem.Status || !strings.HasPrefix(problem.Instance, "urn:tokenvault:request:") {
			t.Fatalf("case %d: %+v", i, problem)
		}
	}
	if _, err := vault.Show(ctx, "no-slash"); err == nil {
		t.Fatal("an id without a namespace was sent")
	}
	if _, err := tokenvault.New(vault.SocketPath + ".absent").Health(ctx); err == nil {
		t.Fatal("no error from a socket that does not exist")
	}
}

func TestEveryCodeTheAPIDocumentsIsMapped(t *testing.T) {
	document, err := os.ReadFile(filepath.Join(repository, "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(document)
	table := text[strings.Index(text, "Codes in use:"):strings.Index(text, "Never sent by the API")]
	documented := map[string]int{}
	for _, row := range regexp.MustCompile(`(?m)^\s*\| (\d{3}) \| (.*) \|$`).FindAllStringSubmatch(table, -1) {
		status, _ := strconv.Atoi(row[1])
		for _, code := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(row[2], -1) {
			documented[code[1]] = status
		}
	}
	if len(documented) < 40 || len(documented) != len(tokenvault.CodeStatus) {
		t.Fatalf("%d codes documented, %d mapped", len(documented), len(tokenvault.CodeStatus))
	}
	for code, status := range documented {
		if tokenvault.CodeStatus[code] != status {
			t.Errorf("%s: documented %d, mapped %d", code, status, tokenvault.CodeStatus[code])
		}
	}
}
