package ledger

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Past the receipt lifetime the outcome comes from the mirror node: found with the
// topic message's sequence and hash, or not found (404) so a new transaction may be
// prepared, or undecided when the mirror fails.
func TestHCSLookupFromMirror(t *testing.T) {
	_, h, _ := fakeHCS(t)
	ctx := context.Background()
	e, _ := TaskComplete{TaskID: 1, Contract: hashA, At: time.Now()}.Entry()
	if err := h.Prepare(ctx, e); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(DefaultValidDuration + ReceiptTTL + time.Minute)
	h.SetClock(func() time.Time { return later })

	hash := make([]byte, 48)
	hash[0] = 7
	mode := "found"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case mode == "down":
			http.Error(w, "down", http.StatusBadGateway)
		case mode == "missing":
			http.NotFound(w, r)
		case strings.HasPrefix(r.URL.Path, "/api/v1/transactions/0.0.1001-"):
			fmt.Fprint(w, `{"transactions":[{"consensus_timestamp":"1700000000.000000042","result":"SUCCESS","entity_id":"0.0.1001"}]}`)
		case r.URL.Path == "/api/v1/topics/0.0.1001/messages" && r.URL.Query().Get("timestamp") == "1700000000.000000042":
			fmt.Fprintf(w, `{"messages":[{"consensus_timestamp":"1700000000.000000042","running_hash":%q,"sequence_number":17}]}`, base64.StdEncoding.EncodeToString(hash))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	h.cfg.MirrorURL = srv.URL

	r, ok, err := h.Lookup(ctx, e)
	if err != nil || !ok || r.Sequence != 17 || r.RunningHash[0] != 7 || r.ConsensusAt.Nanosecond() != 42 {
		t.Fatalf("found: %+v %v %v", r, ok, err)
	}
	mode = "missing"
	if _, ok, err := h.Lookup(ctx, e); ok || err != nil {
		t.Fatalf("missing: %v %v", ok, err)
	}
	mode = "down"
	if _, _, err := h.Lookup(ctx, e); err == nil {
		t.Fatal("mirror down decided the outcome")
	}
	h.cfg.MirrorURL = ""
	if _, ok, err := h.Lookup(ctx, e); ok || err != nil {
		t.Fatalf("no mirror: %v %v", ok, err)
	}
}
