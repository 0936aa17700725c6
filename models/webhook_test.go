package models

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestWebhookValidate(t *testing.T) {
	for _, c := range []struct {
		url, field string
	}{
		{"https://hooks.example.test/a", ""},
		{"http://127.0.0.1:9000/x?y=1", ""},
		{"", "url"},
		{"ftp://example.test", "url"},
		{"hooks.example.test/a", "url"},
		{"https://user:pw@example.test", "url"},
		{"https:///nohost", "url"},
		{"https://example.test/#frag", "url"},
	} {
		w := &Webhook{Name: " ops ", URL: c.url, Events: []string{HookTaskBlocked, HookTaskBlocked}}
		err := w.Validate()
		var e *Error
		got := ""
		if err != nil {
			if !asHookError(err, &e) {
				t.Fatalf("%s: %v", c.url, err)
			}
			for k := range e.Fields {
				got = k
			}
		}
		if got != c.field {
			t.Errorf("%q: field error on %q, want %q (%v)", c.url, got, c.field, err)
		}
		if err == nil && (w.Name != "ops" || len(w.Events) != 1) {
			t.Errorf("not normalised: %+v", w)
		}
	}
	w := &Webhook{Name: "x", URL: "https://a.test", Events: []string{"task.created"}}
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), "unknown event") {
		t.Errorf("unknown event: %v", err)
	}
	if s := NewWebhookSecret(); !strings.HasPrefix(s, "whsec_") || len(s) != len("whsec_")+44 || s == NewWebhookSecret() {
		t.Errorf("secret %q", s)
	}
}

func asHookError(err error, e **Error) bool {
	x, ok := err.(*Error)
	*e = x
	return ok
}

func TestRetryPolicy(t *testing.T) {
	p := DefaultRetryPolicy
	want := []time.Duration{5 * time.Second, 30 * time.Second, 3 * time.Minute, 18 * time.Minute, time.Hour, time.Hour}
	for i, w := range want {
		if got := p.Wait(i + 1); got != w {
			t.Errorf("Wait(%d) = %s, want %s", i+1, got, w)
		}
	}
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := &WebhookDelivery{CreatedAt: created, State: DeliveryPending, Attempts: 1}
	p.Settle(d, HookOutcome{At: created.Add(time.Second), Status: 503, Err: "busy"})
	if d.State != DeliveryPending || !d.NextAttemptAt.Equal(created.Add(6*time.Second)) || d.LastStatus != 503 {
		t.Fatalf("after a 503: %+v", d)
	}
	d.Attempts = 30
	p.Settle(d, HookOutcome{At: created.Add(23*time.Hour + 30*time.Minute)})
	if d.State != DeliveryFailed {
		t.Fatalf("a retry past a day did not fail: %+v", d)
	}
	d.State = DeliveryPending
	p.Settle(d, HookOutcome{At: created.Add(time.Hour), Status: 204})
	if d.State != DeliveryDelivered || d.DeliveredAt == nil {
		t.Fatalf("a 204: %+v", d)
	}
	d.State = DeliveryPending
	p.Settle(d, HookOutcome{At: created.Add(time.Hour), Status: 410})
	if d.State != DeliveryFailed {
		t.Fatalf("a 410: %+v", d)
	}
}

func TestHookCandidate(t *testing.T) {
	for typ, data := range map[string]string{
		"task.blocked": "", "task.escalated": "", "question.asked": "",
		"goal.pending_verify": `{"from":"active","to":"pending_verify"}`,
	} {
		e := &Event{Type: typ, Data: json.RawMessage(data)}
		if typ == "goal.pending_verify" {
			e.Type = "goal.state_changed"
		}
		if got := HookCandidate(e); got != typ {
			t.Errorf("%s: %q", typ, got)
		}
	}
	for _, e := range []*Event{{Type: "task.created"}, {Type: "goal.state_changed", Data: json.RawMessage(`{"to":"active"}`)}, {Type: "goal.verified"}} {
		if got := HookCandidate(e); got != "" {
			t.Errorf("%s %s: %q", e.Type, e.Data, got)
		}
	}
}
