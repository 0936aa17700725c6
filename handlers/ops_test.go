package handlers_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
)

// /readyz reports what confines workers and is 503, with the reason, while workers
// cannot start (the sandbox on and the kernel unable to confine them).
func TestReadyzSandbox(t *testing.T) {
	_, svc := handlertest.Open(t, "sqlite")
	for _, tc := range []struct {
		ready  bool
		status int
	}{{true, http.StatusOK}, {false, http.StatusServiceUnavailable}} {
		msg := "sandbox on: Landlock ABI 7"
		if !tc.ready {
			msg = "sandbox unavailable, workers do not start: the kernel has no Landlock"
		}
		_, srv := handlertest.Serve(t, handlers.Deps{Service: svc, Workers: func() (bool, string) { return tc.ready, msg }})
		code, body := handlertest.Request(t, http.MethodGet, srv.URL+"/readyz", "", "", nil)
		var got map[string]string
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		if code != tc.status || got["sandbox"] != msg {
			t.Errorf("ready=%v: %d %v, want %d with sandbox %q", tc.ready, code, got, tc.status, msg)
		}
		if !tc.ready && got["reason"] != msg {
			t.Errorf("unavailable without the reason: %v", got)
		}
	}
}
