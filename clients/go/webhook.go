package tokenvault

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrWebhookNotVerified is what VerifyWebhook returns (wrapped) for a delivery that is not
// authentic, or too old or too new to be trusted.
var ErrWebhookNotVerified = errors.New("tokenvault: webhook not verified")

// VerifyWebhook checks a webhook delivery signed the way Standard Webhooks specifies:
// HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<raw body>" with the endpoint's secret
// ("whsec_" + base64), sent as one or more space-separated "v1,<base64>" entries in
// webhook-signature, and a timestamp within tolerance of now. Pass the body exactly as received,
// before any JSON parsing.
//
// Whatever the delivery, it returns an error that is not ErrWebhookNotVerified for a secret that
// is not "whsec_" + base64 of a key of at least one byte (an empty key is one anyone has, so
// every forged signature would verify), a negative tolerance, or a zero now.
func VerifyWebhook(secret string, header http.Header, body []byte, tolerance time.Duration, now time.Time) error {
	if tolerance < 0 {
		return fmt.Errorf("tokenvault: the webhook tolerance %v is negative", tolerance)
	}
	if now.IsZero() {
		return errors.New("tokenvault: now is the zero time")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("tokenvault: the secret is not whsec_ followed by base64: %w", err)
	}
	if len(key) == 0 {
		return errors.New("tokenvault: the secret is empty: whsec_ must be followed by a key")
	}
	id, timestamp, signatures := header.Get("webhook-id"), header.Get("webhook-timestamp"), header.Get("webhook-signature")
	if id == "" || timestamp == "" || signatures == "" {
		return fmt.Errorf("%w: webhook-id, webhook-timestamp and webhook-signature are all required", ErrWebhookNotVerified)
	}
	sent, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: webhook-timestamp is not a number of seconds", ErrWebhookNotVerified)
	}
	if age := now.Sub(time.Unix(sent, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("%w: webhook-timestamp is too far from the current time", ErrWebhookNotVerified)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	expected := []byte(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	for _, entry := range strings.Split(signatures, " ") {
		version, signature, _ := strings.Cut(entry, ",")
		if version == "v1" && hmac.Equal([]byte(signature), expected) {
			return nil
		}
	}
	return fmt.Errorf("%w: no signature matches", ErrWebhookNotVerified)
}
