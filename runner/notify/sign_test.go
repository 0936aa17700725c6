package notify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/notify"
)

// specVerify checks a delivery's signature the way the Standard Webhooks
// specification describes it, written here apart from notify.Sign: the secret is
// whsec_ and base64; the signed content is "id.timestamp.body"; the header is a
// space-separated list of "v1,<base64 HMAC-SHA256>", any of which may match.
func specVerify(secret string, h http.Header, body []byte) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("missing headers")
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		return fmt.Errorf("timestamp %q is not an integer", ts)
	}
	if !strings.HasPrefix(secret, "whsec_") {
		return fmt.Errorf("secret without whsec_")
	}
	key, err := base64.StdEncoding.DecodeString(secret[len("whsec_"):])
	if err != nil {
		return err
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s.%s.", id, ts)
	m.Write(body)
	want := m.Sum(nil)
	for _, s := range strings.Split(sigs, " ") {
		v, b64, ok := strings.Cut(s, ",")
		if !ok || v != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no signature matches")
}

// libVerify checks with the Standard Webhooks reference library for Go, as a receiver
// would.
func libVerify(secret string, h http.Header, body []byte) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	return wh.Verify(body, h)
}

func TestSignSpecVector(t *testing.T) {
	// The specification's own example (also the reference library's test).
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	got, err := notify.Sign([]string{secret}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func TestSignVerifiesWithBothSecretsOfARotation(t *testing.T) {
	oldS, newS, other := models.NewWebhookSecret(), models.NewWebhookSecret(), models.NewWebhookSecret()
	body := []byte(`{"type":"task.blocked"}`)
	now := time.Now()
	sig, err := notify.Sign([]string{newS, oldS}, "msg_1_2", now, body)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Split(sig, " ")); n != 2 {
		t.Fatalf("%d signatures, want 2: %s", n, sig)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_1_2")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	for _, s := range []string{oldS, newS} {
		if err := specVerify(s, h, body); err != nil {
			t.Errorf("spec: %v", err)
		}
		if err := libVerify(s, h, body); err != nil {
			t.Errorf("library: %v", err)
		}
	}
	if specVerify(other, h, body) == nil || libVerify(other, h, body) == nil {
		t.Error("a secret never used verified the signature")
	}
	if specVerify(newS, h, append(body, ' ')) == nil || libVerify(newS, h, append(body, ' ')) == nil {
		t.Error("a changed body verified")
	}
	if _, err := notify.Sign([]string{"whsec_not base64!"}, "m", now, body); err == nil || strings.Contains(err.Error(), "not base64!") {
		t.Errorf("bad secret: %v", err)
	}
}
