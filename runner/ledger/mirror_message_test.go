package ledger

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestCheckOnTopic: the topic's message 9 is read from a mirror node and compared byte
// for byte with the entry's; another message, or a missing one, fails.
func TestCheckOnTopic(t *testing.T) {
	msg := []byte(`{"v":1,"type":"task.complete","attestation":"ab"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/topics/0.0.1001/messages/9" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, `{"consensus_timestamp":"1700000000.000000042","message":%q,"sequence_number":9}`, base64.StdEncoding.EncodeToString(msg))
	}))
	defer srv.Close()
	ctx := context.Background()
	at, err := CheckOnTopic(ctx, srv.Client(), srv.URL, "0.0.1001", msg, 9)
	if err != nil || at.Unix() != 1700000000 || at.Nanosecond() != 42 {
		t.Fatalf("the same message: %v %v", at, err)
	}
	if _, err := CheckOnTopic(ctx, srv.Client(), srv.URL, "0.0.1001", append([]byte{}, msg[1:]...), 9); err == nil {
		t.Fatal("another message matched")
	}
	if _, err := CheckOnTopic(ctx, srv.Client(), srv.URL, "0.0.1001", msg, 10); err == nil {
		t.Fatal("a missing message matched")
	}
}
