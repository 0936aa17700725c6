// Package notify delivers webhook notifications: the outbox rows the store writes in
// the transaction of the event (models/store/webhooks.go) are claimed by a Dispatcher,
// turned into a JSON body (Body), signed as the Standard Webhooks specification says
// (Sign) and sent with a short timeout from goroutines of its own, so an endpoint that
// is slow or dead never holds up the runner: the dispatcher holds no database
// connection while it waits for an answer.
package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
)

// The Standard Webhooks headers.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// Sign returns the webhook-signature header for body sent as message msgID at ts: for
// each secret (whsec_ and the base64 of the key) "v1," and the base64 of the
// HMAC-SHA256 of "msgID.ts.body" under the key, space-separated, so a receiver that
// knows either secret of a rotation verifies it.
func Sign(secrets []string, msgID string, ts time.Time, body []byte) (string, error) {
	if len(secrets) == 0 {
		return "", fmt.Errorf("notify: no signing secret")
	}
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, models.WebhookSecretPrefix))
		if err != nil || len(key) == 0 {
			// Never echo the secret.
			return "", fmt.Errorf("notify: a signing secret is not whsec_ and base64")
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(msgID))
		mac.Write([]byte{'.'})
		mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
		mac.Write([]byte{'.'})
		mac.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}
