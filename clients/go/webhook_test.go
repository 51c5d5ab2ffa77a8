package tokenvault_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	tokenvault "tokenvault.dev/client"
)

// The Standard Webhooks specification's own example. (The daemon's own deliveries come with its
// webhooks.)
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
