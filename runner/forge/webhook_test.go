package forge_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/runner/forge"
	"github.com/countersign/countersign/runner/forge/forgetest"
)

const hookSecret = "hook-secret-123"

func parserFor(fx fixture) forge.WebhookParser {
	if fx.name == "github" {
		return forge.ParseGitHubWebhook
	}
	return forge.ParseGitLabWebhook
}

// deliver builds a signed delivery of p and parses it with secret.
func deliver(t *testing.T, fx fixture, secret string, p forgetest.Payload) (forge.Event, error) {
	t.Helper()
	r := forgetest.NewWebhookRequest(t, "http://countersign.test/hooks", hookSecret, fx.srv.Kind(), p)
	return parserFor(fx)(r, secret)
}

func mustDeliver(t *testing.T, fx fixture, p forgetest.Payload) forge.Event {
	t.Helper()
	ev, err := deliver(t, fx, hookSecret, p)
	if err != nil {
		t.Fatalf("parse %s: %v", p.Event, err)
	}
	if ev.Delivery == "" {
		t.Fatalf("%s: no delivery id", p.Event)
	}
	return ev
}

func TestWebhookEventsMapped(t *testing.T) {
	forges(t, func(t *testing.T, fx fixture) {
		p := openPull(t, fx)
		ev := mustDeliver(t, fx, fx.srv.ReviewPayload(p.Number, "bob", forge.ReviewChangesRequested, "fix it"))
		if ev.Kind != forge.EventReview || ev.Number != p.Number || ev.Actor != "bob" || ev.Review == nil ||
			ev.Review.State != forge.ReviewChangesRequested || ev.Review.Author != "bob" || ev.Review.ID == "" {
			t.Fatalf("changes requested → %+v (review %+v)", ev, ev.Review)
		}
		if fx.name == "github" && (ev.Review.Body != "fix it" || ev.Review.CommitSHA != p.HeadSHA) {
			t.Fatalf("github review body/commit = %q/%q", ev.Review.Body, ev.Review.CommitSHA)
		}
		ev = mustDeliver(t, fx, fx.srv.ReviewPayload(p.Number, "carol", forge.ReviewApproved, ""))
		if ev.Kind != forge.EventReview || ev.Review.State != forge.ReviewApproved || ev.Actor != "carol" {
			t.Fatalf("approved → %+v", ev)
		}
		comment := fx.srv.ReviewPayload(p.Number, "dave", forge.ReviewCommented, "a thought")
		want := "a thought"
		if fx.name == "gitlab" {
			comment, want = fx.srv.NotePayload(p.Number, "dave", "nit", "a.txt", 2), "a.txt:2: nit"
		}
		ev = mustDeliver(t, fx, comment)
		if ev.Kind != forge.EventReview || ev.Review.State != forge.ReviewCommented || ev.Review.Body != want || ev.Actor != "dave" {
			t.Fatalf("commented → %+v (review %+v)", ev, ev.Review)
		}

		before := p.HeadSHA
		after := fx.srv.PushCommit("task/1", "d.txt", "more\n")
		ev = mustDeliver(t, fx, fx.srv.HeadMovedPayload(p.Number, "bob", before))
		if ev.Kind != forge.EventHeadMoved || ev.Number != p.Number || ev.HeadSHA != after || ev.Head != "task/1" {
			t.Fatalf("head moved → %+v, want %s", ev, after)
		}
		ev = mustDeliver(t, fx, fx.srv.PushPayload("task/1", "bob", before))
		if ev.Kind != forge.EventHeadMoved || ev.Number != 0 || ev.Head != "task/1" || ev.HeadSHA != after {
			t.Fatalf("push → %+v", ev)
		}

		mergeSHA := fx.srv.Merge(p.Number, "alice")
		ev = mustDeliver(t, fx, fx.srv.MergePayload(p.Number))
		if ev.Kind != forge.EventMerged || ev.MergeSHA != mergeSHA || ev.Actor != "alice" || ev.Number != p.Number {
			t.Fatalf("merged → %+v, want merge %s by alice", ev, mergeSHA)
		}

		fx.srv.PushCommit("task/2", "e.txt", "two\n")
		p2, err := fx.client.EnsurePull(context.Background(), forge.PullSpec{Head: "task/2", Base: "main", Title: "Task 2"})
		if err != nil {
			t.Fatal(err)
		}
		fx.srv.Close(p2.Number)
		ev = mustDeliver(t, fx, fx.srv.ClosePayload(p2.Number, "erin"))
		if ev.Kind != forge.EventClosed || ev.Number != p2.Number {
			t.Fatalf("closed → %+v", ev)
		}

		ignored := forgetest.RawPayload("ping", map[string]any{"zen": "Keep it simple.", "hook_id": 1})
		if fx.name == "gitlab" {
			ignored = forgetest.RawPayload("Pipeline Hook", map[string]any{"object_kind": "pipeline"})
		}
		if ev = mustDeliver(t, fx, ignored); ev.Kind != forge.EventIgnored {
			t.Fatalf("%s → %+v, want ignored", ignored.Event, ev)
		}
	})
}

func TestWebhookRefusals(t *testing.T) {
	forges(t, func(t *testing.T, fx fixture) {
		p := openPull(t, fx)
		payload := fx.srv.ReviewPayload(p.Number, "bob", forge.ReviewApproved, "")
		sigHeader := map[string]string{"github": "X-Hub-Signature-256", "gitlab": "X-Gitlab-Token"}[fx.name]
		cases := map[string]func() (*http.Request, string){
			"wrong secret": func() (*http.Request, string) {
				return forgetest.NewWebhookRequest(t, "http://x/h", "not-the-secret", fx.srv.Kind(), payload), hookSecret
			},
			"missing signature": func() (*http.Request, string) {
				r := forgetest.NewWebhookRequest(t, "http://x/h", hookSecret, fx.srv.Kind(), payload)
				r.Header.Del(sigHeader)
				return r, hookSecret
			},
			"empty secret": func() (*http.Request, string) {
				return forgetest.NewWebhookRequest(t, "http://x/h", "", fx.srv.Kind(), payload), ""
			},
		}
		if fx.name == "github" {
			cases["tampered body"] = func() (*http.Request, string) {
				r := forgetest.NewWebhookRequest(t, "http://x/h", hookSecret, fx.srv.Kind(), payload)
				b, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(bytes.Replace(b, []byte("bob"), []byte("eve"), 1)))
				return r, hookSecret
			}
		}
		for name, mk := range cases {
			r, secret := mk()
			if ev, err := parserFor(fx)(r, secret); err == nil {
				t.Errorf("%s: accepted as %+v", name, ev)
			}
		}
	})
}

func TestGitLabSigningToken(t *testing.T) {
	srv := forgetest.NewGitLab(t, "acme/widgets", testToken)
	fx := fixture{name: "gitlab", srv: srv}
	c, err := forge.NewGitLab(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	fx.client = c
	p := openPull(t, fx)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	signing := "whsec_" + base64.StdEncoding.EncodeToString(key)
	payload := srv.ReviewPayload(p.Number, "carol", forge.ReviewApproved, "")

	r := forgetest.NewWebhookRequest(t, "http://x/h", signing, forge.GitLab, payload)
	if r.Header.Get("X-Gitlab-Token") != "" || r.Header.Get("webhook-signature") == "" {
		t.Fatalf("signed delivery headers = %v", r.Header)
	}
	ev, err := forge.ParseGitLabWebhook(r, signing)
	if err != nil || ev.Kind != forge.EventReview || ev.Review.State != forge.ReviewApproved {
		t.Fatalf("signed delivery → %+v, %v", ev, err)
	}

	r = forgetest.NewWebhookRequest(t, "http://x/h", signing, forge.GitLab, payload)
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(bytes.Replace(b, []byte("carol"), []byte("mallory"), 1)))
	if _, err := forge.ParseGitLabWebhook(r, signing); err == nil {
		t.Fatal("a tampered signed delivery was accepted")
	}
	// Requiring both: a delivery with only the secret token is refused.
	both := forge.GitLabWebhookParser(hookSecret, signing)
	r = forgetest.NewWebhookRequest(t, "http://x/h", hookSecret, forge.GitLab, payload)
	if _, err := both(r, ""); err == nil {
		t.Fatal("an unsigned delivery passed a parser that requires the signature")
	}
}

func TestSendWebhookToAHandler(t *testing.T) {
	forges(t, func(t *testing.T, fx fixture) {
		p := openPull(t, fx)
		var got []forge.Event
		h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ev, err := parserFor(fx)(r, hookSecret)
			if err != nil {
				http.Error(w, "refused", http.StatusUnauthorized)
				return
			}
			got = append(got, ev)
			w.WriteHeader(http.StatusNoContent)
		}))
		defer h.Close()
		payload := fx.srv.ReviewPayload(p.Number, "bob", forge.ReviewChangesRequested, "no")
		if code := forgetest.SendWebhook(t, h.URL, hookSecret, fx.srv.Kind(), payload); code != http.StatusNoContent {
			t.Fatalf("good delivery answered %d", code)
		}
		if code := forgetest.SendWebhook(t, h.URL, "wrong", fx.srv.Kind(), payload); code != http.StatusUnauthorized {
			t.Fatalf("bad delivery answered %d", code)
		}
		if len(got) != 1 || got[0].Kind != forge.EventReview {
			t.Fatalf("handler saw %+v", got)
		}
	})
}

func TestTokenNeverInErrors(t *testing.T) {
	// A scripted forge refusing a wrong token.
	forges(t, func(t *testing.T, fx fixture) {
		cfg := fx.srv.Config()
		cfg.Token = "wrong-" + testToken
		newClient := map[string]func(forge.Config) (forge.Client, error){"github": forge.NewGitHub, "gitlab": forge.NewGitLab}[fx.name]
		c, err := newClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetPull(context.Background(), 1)
		if err == nil || strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), "401") {
			t.Fatalf("wrong token: err = %v", err)
		}
	})
	// A server that echoes the request's credentials into its error body.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"message":"bad request from `+r.Header.Get("Authorization")+r.Header.Get("PRIVATE-TOKEN")+`"}`)
	}))
	defer echo.Close()
	for name, mk := range map[string]func(forge.Config) (forge.Client, error){"github": forge.NewGitHub, "gitlab": forge.NewGitLab} {
		c, err := mk(forge.Config{BaseURL: echo.URL, Repo: "acme/widgets", Token: testToken})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Login(context.Background())
		if err == nil || strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), "[token]") {
			t.Fatalf("%s: echoed token: err = %v", name, err)
		}
	}
}
