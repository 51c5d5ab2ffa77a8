package tokenvault_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	tokenvault "tokenvault.dev/client"
)

// The Standard Webhooks specification's own example.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = "1614265330"
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	specBody      = `{"test": 2432232314}`
)

func specHeader(id, timestamp, signature string) http.Header {
	header := http.Header{}
	for name, value := range map[string]string{"webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": signature} {
		if value != "" {
			header.Set(name, value)
		}
	}
	return header
}

func TestTheSpecificationsExampleIsAccepted(t *testing.T) {
	now := time.Unix(1614265330+10, 0)
	for _, signature := range []string{specSignature, "v1,bm90IGl0 v2,eA== " + specSignature} {
		if err := tokenvault.VerifyWebhook(specSecret, specHeader(specID, specTimestamp, signature), []byte(specBody), 5*time.Minute, now); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAnythingChangedIsRefused(t *testing.T) {
	now := time.Unix(1614265330+10, 0)
	cases := []struct {
		secret string
		header http.Header
		body   string
	}{
		{specSecret, specHeader(specID, specTimestamp, specSignature), `{"test": 2432232315}`},
		{"whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", specHeader(specID, specTimestamp, specSignature), specBody},
		{specSecret, specHeader("msg_other", specTimestamp, specSignature), specBody},
		{specSecret, specHeader(specID, "1614265331", specSignature), specBody},
		{specSecret, specHeader(specID, specTimestamp, "v2,"+specSignature[3:]), specBody},
		{specSecret, specHeader(specID, specTimestamp, ""), specBody},
		{specSecret, specHeader(specID, "soon", specSignature), specBody},
	}
	for i, c := range cases {
		if err := tokenvault.VerifyWebhook(c.secret, c.header, []byte(c.body), 5*time.Minute, now); !errors.Is(err, tokenvault.ErrWebhookNotVerified) {
			t.Errorf("case %d: %v, want ErrWebhookNotVerified", i, err)
		}
	}
	for _, offset := range []int64{301, -301} {
		late := time.Unix(1614265330+offset, 0)
		if err := tokenvault.VerifyWebhook(specSecret, specHeader(specID, specTimestamp, specSignature), []byte(specBody), 5*time.Minute, late); !errors.Is(err, tokenvault.ErrWebhookNotVerified) {
			t.Errorf("%d s away: %v", offset, err)
		}
	}
}

func TestTheBoundaryOfTheToleranceIsIn(t *testing.T) {
	for _, offset := range []int64{300, -300} {
		now := time.Unix(1614265330+offset, 0)
		if err := tokenvault.VerifyWebhook(specSecret, specHeader(specID, specTimestamp, specSignature), []byte(specBody), 5*time.Minute, now); err != nil {
			t.Errorf("%d s away: %v", offset, err)
		}
	}
}

// TestASecretOrSettingThatWouldLetAnythingThroughIsAnError: "whsec_" decodes to an empty key,
// which anyone can sign with; the refusal is not ErrWebhookNotVerified, whatever the delivery.
func TestASecretOrSettingThatWouldLetAnythingThroughIsAnError(t *testing.T) {
	mac := hmac.New(sha256.New, nil)
	mac.Write([]byte(specID + "." + specTimestamp + "." + specBody))
	forged := specHeader(specID, specTimestamp, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	now := time.Unix(1614265330+10, 0)
	cases := []struct {
		name      string
		secret    string
		header    http.Header
		tolerance time.Duration
		now       time.Time
	}{
		{"whsec_ forged", "whsec_", forged, 5 * time.Minute, now},
		{"empty forged", "", forged, 5 * time.Minute, now},
		{"whsec_ unsigned", "whsec_", http.Header{}, 5 * time.Minute, now},
		{"negative tolerance", specSecret, specHeader(specID, specTimestamp, specSignature), -time.Second, now},
		{"zero now", specSecret, specHeader(specID, specTimestamp, specSignature), 5 * time.Minute, time.Time{}},
	}
	for _, c := range cases {
		err := tokenvault.VerifyWebhook(c.secret, c.header, []byte(specBody), c.tolerance, c.now)
		if err == nil || errors.Is(err, tokenvault.ErrWebhookNotVerified) {
			t.Errorf("%s: %v, want an error that is not ErrWebhookNotVerified", c.name, err)
		}
	}
}

// TestTheDaemonsDeliveryIsAcceptedAndATamperedOneRefused: the daemon signs a deletion's event;
// the verifier takes it as sent and refuses it altered.
func TestTheDaemonsDeliveryIsAcceptedAndATamperedOneRefused(t *testing.T) {
	type delivery struct {
		header http.Header
		body   []byte
	}
	arrived := make(chan delivery, 16)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		arrived <- delivery{r.Header.Clone(), body}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	p := newProvider(t)
	d := startDaemonWithWebhooks(t, p, receiver.URL+"/hook")
	client := tokenvault.New(d.socket)
	ctx := context.Background()
	if _, _, err := client.Put(ctx, "payments/alice", "idp", p.issue(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Delete(ctx, "payments/alice", false); err != nil {
		t.Fatal(err)
	}
	var got delivery
	for got.body == nil {
		select {
		case next := <-arrived:
			var event struct{ Type string }
			if json.Unmarshal(next.body, &event) == nil && event.Type == "credential.deleted" {
				got = next
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no credential.deleted delivery within 20 s")
		}
	}
	if err := tokenvault.VerifyWebhook(d.webhookSecret, got.header, got.body, 5*time.Minute, time.Now()); err != nil {
		t.Fatalf("the daemon's delivery was refused: %v", err)
	}
	_, issued := p.current()
	for _, token := range issued {
		if bytes.Contains(got.body, []byte(token)) {
			t.Fatal("a delivery holds a token")
		}
	}
	tampered := bytes.Replace(got.body, []byte("alice"), []byte("mallory"), 1)
	if err := tokenvault.VerifyWebhook(d.webhookSecret, got.header, tampered, 5*time.Minute, time.Now()); !errors.Is(err, tokenvault.ErrWebhookNotVerified) {
		t.Fatalf("a tampered delivery: %v", err)
	}
	if err := documentedVerifier(t, d.webhookSecret, got.header, got.body); err != nil {
		t.Fatalf("docs/webhooks.md's verifier refused the daemon's delivery: %v", err)
	}
	if documentedVerifier(t, d.webhookSecret, got.header, tampered) == nil {
		t.Fatal("docs/webhooks.md's verifier took a tampered delivery")
	}
}

// documentedVerifier runs docs/webhooks.md's standard-library verification snippet on a delivery.
func documentedVerifier(t *testing.T, secret string, header http.Header, body []byte) error {
	readme, err := os.ReadFile(filepath.Join(repository, "docs", "webhooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	snippet := regexp.MustCompile("(?s)```go\n(func verify\\(.*?)```").FindSubmatch(readme)
	if snippet == nil {
		t.Fatal("docs/webhooks.md has no Go verification snippet")
	}
	directory := t.TempDir()
	program := `package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

` + string(snippet[1]) + `
func main() {
	var header http.Header
	_ = json.Unmarshal([]byte(os.Args[2]), &header)
	body, _ := os.ReadFile(os.Args[3])
	if err := verify(os.Args[1], header, body); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
}
`
	encoded, _ := json.Marshal(header)
	files := map[string][]byte{"main.go": []byte(program), "body": body, "go.mod": []byte("module readme\n\ngo 1.19\n")}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(directory, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	command := exec.Command("go", "run", ".", secret, string(encoded), filepath.Join(directory, "body"))
	command.Dir = directory
	if output, err := command.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, output)
	}
	return nil
}
