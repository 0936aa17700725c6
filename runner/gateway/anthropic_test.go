package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

const sonnet = "claude-sonnet-4-5"

// sdkClient is Anthropic's Go SDK pointed at the gateway with auth, recording what
// it receives in s.
func sdkClient(base string, s *seen, auth option.RequestOption) anthropic.Client {
	return anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(base), auth,
		option.WithHTTPClient(&http.Client{Transport: s}))
}

func hello() anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: sonnet, MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}
}

// TestAnthropicSDKMetered: Anthropic's SDK, streaming and not, with the credential
// as x-api-key and as a Bearer token, gets its answers through the gateway; the
// tokens metered are the scripted ones, the upstream got the real key on every
// call and never the credential, and nothing the client received holds the key.
func TestAnthropicSDKMetered(t *testing.T) {
	s := script{In: 1200, Out: 345, CacheRead: 800, CacheWrite: 60, Chunks: 3}
	up := newScripted(t, s)
	gw, base := serve(t, up.config())
	l := gw.Issue(Grant{})
	rec := &seen{rt: http.DefaultTransport}
	ctx := context.Background()
	for _, auth := range []option.RequestOption{option.WithAPIKey(l.Credential()), option.WithAuthToken(l.Credential())} {
		c := sdkClient(base, rec, auth)
		msg, err := c.Messages.New(ctx, hello())
		if err != nil || msg.Usage.OutputTokens != s.Out || !strings.Contains(msg.Content[0].Text, "word") {
			t.Fatalf("non-streamed call: %v, %+v", err, msg)
		}
		stream := c.Messages.NewStreaming(ctx, hello())
		var acc anthropic.Message
		for stream.Next() {
			if err := acc.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if stream.Err() != nil || acc.Usage.OutputTokens != s.Out || acc.Content[0].Text != "word word word " {
			t.Fatalf("streamed call: %v, %+v", stream.Err(), acc)
		}
	}
	m := l.Revoke()
	wantTokens(t, m, sonnet, s, 4)
	if u := m.Usage(); *u.InputTokens != 4*s.In || *u.CacheWriteTokens != 4*s.CacheWrite || *u.CostUSD <= 0 ||
		u.CostSource != "priced" || u.Model != sonnet || u.Note != "" {
		t.Fatalf("as models.Usage: %s (%s)", u.Summary(), u.Note)
	}
	if m.Calls != 4 || m.Refused != 0 {
		t.Fatalf("calls %d refused %d, want 4 and 0", m.Calls, m.Refused)
	}
	for i, k := range up.keysSeen() {
		if k != realKey {
			t.Fatalf("upstream call %d was signed %q, not with the real key", i, k)
		}
	}
	if rec.len() == 0 || rec.contains(realKey) || rec.contains(realKey[:12]) {
		t.Fatalf("the client saw the provider key (or saw nothing: %d bytes)", rec.len())
	}
}

// TestDeadCredentialAnthropicShape: a revoked or unknown credential is refused 401
// in Anthropic's error shape, and no call reaches the upstream (the SDK does not
// retry it).
func TestDeadCredentialAnthropicShape(t *testing.T) {
	up := newScripted(t, script{In: 1, Out: 1})
	gw, base := serve(t, up.config())
	l := gw.Issue(Grant{})
	rec := &seen{rt: http.DefaultTransport}
	live := sdkClient(base, rec, option.WithAPIKey(l.Credential()))
	if _, err := live.Messages.New(context.Background(), hello()); err != nil {
		t.Fatal(err)
	}
	l.Revoke()
	for name, cred := range map[string]string{"revoked": l.Credential(), "unknown": credPrefix + "AAAA", "provider key": realKey} {
		c := sdkClient(base, rec, option.WithAPIKey(cred))
		_, err := c.Messages.New(context.Background(), hello())
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 ||
			!strings.Contains(apiErr.RawJSON(), `"type":"error"`) || !strings.Contains(apiErr.RawJSON(), `"authentication_error"`) {
			t.Fatalf("%s credential: got %v, want a 401 authentication_error", name, err)
		}
	}
	if up.count() != 1 {
		t.Fatalf("upstream got %d calls, want only the live credential's 1", up.count())
	}
}

// TestCountTokensUnmetered: count_tokens reaches the upstream and costs nothing.
func TestCountTokensUnmetered(t *testing.T) {
	up := newScripted(t, script{In: 77})
	gw, base := serve(t, up.config())
	l := gw.Issue(Grant{Caps: []Cap{{Key: "task:1", RemainingUSD: 0.000001}}})
	c := sdkClient(base, &seen{rt: http.DefaultTransport}, option.WithAPIKey(l.Credential()))
	n, err := c.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{Model: sonnet,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}})
	if err != nil || n.InputTokens != 77 {
		t.Fatalf("count_tokens: %v %+v", err, n)
	}
	if m := l.Revoke(); m.Calls != 1 || m.CostUSD != 0 || len(m.Models) != 0 {
		t.Fatalf("metered %+v, want one unmetered call", m)
	}
}
