package tokenvault_test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// repository is the checkout this module lives in (clients/go).
var repository, _ = filepath.Abs(filepath.Join("..", ".."))

// provider is a loopback authorization server and API: /token answers refresh and code grants
// with fresh tokens (rotating the refresh token, refusing a spent one), /api/... answers 200 to
// the current access token and 401 to anything else. Every token it issued is kept.
type provider struct {
	server *httptest.Server
	mu     sync.Mutex
	access string
	fresh  string
	issued []string
	calls  int
}

func newProvider(t *testing.T) *provider {
	p := &provider{}
	p.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case r.URL.Path == "/token" && r.Method == http.MethodPost:
			_ = r.ParseForm()
			if r.PostForm.Get("grant_type") == "refresh_token" && r.PostForm.Get("refresh_token") != p.fresh {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"error":"invalid_grant"}`))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(p.issueLocked())
		case r.URL.Path == "/device" && r.Method == http.MethodPost:
			// RFC 8628 section 3.2, approved at once: the first poll gets tokens.
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"device_code": "device-code-1", "user_code": "WDJB-MJHT", `+
				`"verification_uri": %q, "expires_in": 60, "interval": 1}`, p.server.URL+"/verify")
		case r.URL.Path == "/api/redirect":
			// Off the allowed bases, onto a route of the daemon itself: never to be followed.
			w.Header().Set("Location", "/v1/credentials/payments/alice/token")
			w.WriteHeader(http.StatusFound)
		case len(r.URL.Path) > 5 && r.URL.Path[:5] == "/api/":
			p.calls++
			if r.Header.Get("Authorization") != "Bearer "+p.access {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("hello from the api\n"))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(p.server.Close)
	return p
}

func randomToken(prefix string) string {
	bytes := make([]byte, 12)
	_, _ = rand.Read(bytes)
	return prefix + hex.EncodeToString(bytes)
}

func (p *provider) issueLocked() []byte {
	p.access, p.fresh = randomToken("at-"), randomToken("rt-")
	p.issued = append(p.issued, p.access, p.fresh)
	document, _ := json.Marshal(map[string]any{
		"access_token": p.access, "refresh_token": p.fresh, "token_type": "Bearer", "expires_in": 3600,
	})
	return document
}

// issue is a token response the provider now honours, as an SDK would hand it to the app.
func (p *provider) issue() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.issueLocked()
}

func (p *provider) current() (access string, issued []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.access, append([]string(nil), p.issued...)
}

// daemon is `tokenvault serve` (the binary `make test` built, or $TOKENVAULT_BIN) on a fresh vault
// with provider instances oauth2 (no endpoints, as `make run` has) and idp (the loopback provider).
type daemon struct {
	socket  string
	process *exec.Cmd
	done    chan struct{}
	// webhookSecret is the secret of endpoint "receiver", when the daemon has one.
	webhookSecret string
}

func startDaemon(t *testing.T, p *provider) *daemon { return startDaemonWithWebhooks(t, p, "") }

// startDaemonWithWebhooks is startDaemon with a webhook endpoint "receiver" at webhookURL (none
// when empty), its secret made by `tokenvault webhooks secret`.
func startDaemonWithWebhooks(t *testing.T, p *provider, webhookURL string) *daemon {
	return startDaemonWith(t, p, webhookURL, "")
}

// startDaemonWith is startDaemonWithWebhooks with more provider instances: providers is JSON
// object members ("name": {...}), in which "$SECRET" is the path of a file holding vault-secret.
func startDaemonWith(t *testing.T, p *provider, webhookURL, providers string) *daemon {
	binary := os.Getenv("TOKENVAULT_BIN")
	if binary == "" {
		binary = filepath.Join(repository, ".build", "debug", "tokenvault")
	}
	if _, err := os.Stat(binary); err != nil {
		t.Fatalf("no tokenvault binary at %s (run `swift build` or `make test`, or set TOKENVAULT_BIN): %v", binary, err)
	}
	directory := t.TempDir()
	data, socket := filepath.Join(directory, "data"), filepath.Join(directory, "tv.sock")
	secret, config := filepath.Join(directory, "client.secret"), filepath.Join(directory, "config.json")
	if err := os.WriteFile(secret, []byte("vault-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	webhooks, webhookSecret := "", ""
	if webhookURL != "" {
		secretFile := filepath.Join(directory, "hook.whsec")
		if output, err := exec.Command(binary, "webhooks", "secret", secretFile).CombinedOutput(); err != nil {
			t.Fatalf("tokenvault webhooks secret: %v\n%s", err, output)
		}
		written, err := os.ReadFile(secretFile)
		if err != nil {
			t.Fatal(err)
		}
		webhookSecret = strings.TrimSpace(string(written))
		webhooks = fmt.Sprintf(`, "webhooks": {"endpoints": {"receiver": {"url": %q, "secret_file": %q}}}`, webhookURL, secretFile)
	}
	if providers != "" {
		quoted, _ := json.Marshal(secret)
		providers = ", " + strings.ReplaceAll(providers, `"$SECRET"`, string(quoted))
	}
	document := fmt.Sprintf(`{"providers": {"oauth2": {"kind": "oauth2"}, "idp": {"kind": "oauth2",
		"token_endpoint": %q, "client_id": "vault-client", "client_secret_file": %q, "api_base_urls": [%q],
		"authorization_endpoint": %q, "redirect_uris": ["https://app.example/cb"],
		"device_authorization_endpoint": %q}%s},
		"limits": {"on_demand_refresh_seconds": 1}%s}`, p.server.URL+"/token", secret, p.server.URL+"/api",
		p.server.URL+"/authorize", p.server.URL+"/device", providers, webhooks)
	if err := os.WriteFile(config, []byte(document), 0o600); err != nil {
		t.Fatal(err)
	}
	if output, err := exec.Command(binary, "init", "--data-dir", data).CombinedOutput(); err != nil {
		t.Fatalf("tokenvault init: %v\n%s", err, output)
	}
	log, err := os.Create(filepath.Join(directory, "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	process := exec.Command(binary, "serve", "--data-dir", data, "--socket", socket)
	process.Env = append(os.Environ(), "TOKENVAULT_CONFIG="+config, "TOKENVAULT_LOG_LEVEL=warning")
	process.Stdout, process.Stderr = log, log
	if err := process.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{socket: socket, process: process, done: make(chan struct{}), webhookSecret: webhookSecret}
	go func() { _ = process.Wait(); close(d.done) }()
	t.Cleanup(d.stop)
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Connected, not only created: the socket file exists a moment before the daemon listens.
		if connection, err := net.Dial("unix", socket); err == nil {
			connection.Close()
			return d
		}
		select {
		case <-d.done:
			output, _ := os.ReadFile(log.Name())
			t.Fatalf("the daemon did not start:\n%s", output)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for the daemon to end (SIGKILL after 30 s).
func (d *daemon) stop() {
	_ = d.process.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		_ = d.process.Process.Kill()
		<-d.done
	}
}

// authlib is scripts/authorization-server.py, a real OAuth server built on Authlib (client
// vault-client, secret vault-secret), run with the Python environment `make test` installs it in.
type authlib struct {
	issuer string
}

// startAuthlib starts the Authlib server for one test (killed at its end), or skips the test,
// saying why, when .build/test-venv is missing: an optional peer, never a silent pass.
func startAuthlib(t *testing.T) *authlib {
	python := filepath.Join(repository, ".build", "test-venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no %s with Authlib (run scripts/install-deps.sh --test, or make test): %v", python, err)
	}
	log, err := os.Create(filepath.Join(t.TempDir(), "authorization-server.log"))
	if err != nil {
		t.Fatal(err)
	}
	process := exec.Command(python, filepath.Join(repository, "scripts", "authorization-server.py"), "--port", "0")
	process.Stderr = log
	stdout, err := process.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := process.Start(); err != nil {
		t.Fatal(err)
	}
	// SIGKILL: it holds nothing worth a graceful end.
	t.Cleanup(func() { _ = process.Process.Kill(); _ = process.Wait(); log.Close() })
	// It prints one JSON line with its issuer once it listens.
	line := make(chan string, 1)
	go func() {
		text, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- text
	}()
	var started struct {
		Issuer string `json:"issuer"`
	}
	select {
	case text := <-line:
		if err := json.Unmarshal([]byte(text), &started); err != nil || started.Issuer == "" {
			output, _ := os.ReadFile(log.Name())
			t.Fatalf("the authorization server did not start (%q, %v):\n%s", text, err, output)
		}
	case <-time.After(30 * time.Second):
		output, _ := os.ReadFile(log.Name())
		t.Fatalf("the authorization server did not say its issuer within 30 s:\n%s", output)
	}
	return &authlib{issuer: started.Issuer}
}

// clientCredentials is an access token of the client credentials grant, asked for directly.
func (a *authlib) clientCredentials(t *testing.T, scope string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}
	request, err := http.NewRequest(http.MethodPost, a.issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	request.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	request.SetBasicAuth("vault-client", "vault-secret")
	var issued struct {
		AccessToken string `json:"access_token"`
	}
	a.get(t, request, &issued)
	if issued.AccessToken == "" {
		t.Fatal("the client credentials grant answered no access token")
	}
	return issued.AccessToken
}

// exchanges is GET /test/exchanges: the token exchange requests that got a token.
func (a *authlib) exchanges(t *testing.T) []map[string]any {
	t.Helper()
	request, err := http.NewRequest(http.MethodGet, a.issuer+"/test/exchanges", nil)
	if err != nil {
		t.Fatal(err)
	}
	var recorded struct {
		Count    int              `json:"count"`
		Requests []map[string]any `json:"requests"`
	}
	a.get(t, request, &recorded)
	if recorded.Count != len(recorded.Requests) {
		t.Fatalf("/test/exchanges: count %d, %d requests", recorded.Count, len(recorded.Requests))
	}
	return recorded.Requests
}

func (a *authlib) get(t *testing.T, request *http.Request, document any) {
	t.Helper()
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	body, _ := io.ReadAll(response.Body)
	if response.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %s", request.Method, request.URL, response.StatusCode, body)
	}
	if err := json.Unmarshal(body, document); err != nil {
		t.Fatalf("%s %s: %v", request.Method, request.URL, err)
	}
}
