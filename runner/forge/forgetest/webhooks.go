package forgetest

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/countersign/countersign/runner/forge"
)

// Payload is one webhook delivery's event name (X-GitHub-Event / X-Gitlab-Event)
// and JSON body.
type Payload struct {
	Event string
	Body  []byte
}

// NewWebhookRequest builds the delivery a forge would POST to url: GitHub's
// X-GitHub-Event, X-GitHub-Delivery and X-Hub-Signature-256 (HMAC-SHA256 of the body
// under secret); GitLab's X-Gitlab-Event, X-Gitlab-Event-UUID and X-Gitlab-Token — or,
// when secret is a signing token ("whsec_..."), the Standard Webhooks headers
// webhook-id, webhook-timestamp and webhook-signature instead of the token.
func NewWebhookRequest(t testing.TB, url, secret string, kind forge.Kind, p Payload) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(p.Body))
	if err != nil {
		t.Fatalf("forgetest: webhook request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	id := newUUID(t)
	switch kind {
	case forge.GitHub:
		req.Header.Set("User-Agent", "GitHub-Hookshot/forgetest")
		req.Header.Set("X-GitHub-Event", p.Event)
		req.Header.Set("X-GitHub-Delivery", id)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(p.Body)
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	case forge.GitLab:
		req.Header.Set("User-Agent", "GitLab/18.0.0")
		req.Header.Set("X-Gitlab-Event", p.Event)
		req.Header.Set("X-Gitlab-Event-UUID", id)
		req.Header.Set("X-Gitlab-Webhook-UUID", newUUID(t))
		req.Header.Set("Idempotency-Key", id)
		if !strings.HasPrefix(secret, "whsec_") {
			req.Header.Set("X-Gitlab-Token", secret)
			break
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatalf("forgetest: signing token: %v", err)
		}
		now := time.Now()
		sig, err := wh.Sign(id, now, p.Body)
		if err != nil {
			t.Fatalf("forgetest: sign: %v", err)
		}
		req.Header.Set(standardwebhooks.HeaderWebhookID, id)
		req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
		req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	default:
		t.Fatalf("forgetest: unknown forge %q", kind)
	}
	return req
}

// SendWebhook POSTs the delivery NewWebhookRequest builds and returns the status code.
func SendWebhook(t testing.TB, url, secret string, kind forge.Kind, p Payload) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(NewWebhookRequest(t, url, secret, kind, p))
	if err != nil {
		t.Fatalf("forgetest: send webhook: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func newUUID(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func payload(event string, v any) Payload {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps of plain values are marshalled here
	}
	return Payload{Event: event, Body: b}
}

// RawPayload is a delivery of any event with body v marshalled, e.g. a ping.
func RawPayload(event string, v any) Payload { return payload(event, v) }

// ReviewPayload is the delivery for a review of pull number by login. GitHub: a
// pull_request_review "submitted". GitLab: approved → Merge Request Hook "approved";
// changes requested → Merge Request Hook "update" whose reviewers list login with
// state requested_changes; commented → a Note Hook on the merge request.
func (s *Server) ReviewPayload(number int64, login string, state forge.ReviewState, body string) Payload {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull(number)
	if s.kind == forge.GitHub {
		// The delivery of a review AddReview submitted carries that review's id and
		// commit, as GitHub's does; otherwise it is a review only the delivery knows.
		id, commit := s.submitted(number, login, state, body)
		if id == 0 {
			s.nextID++
			id, commit = s.nextID, s.refSHA(p.Head)
		}
		return payload("pull_request_review", map[string]any{
			"action": "submitted",
			"review": map[string]any{"id": id, "user": s.ghUserJSON(login), "body": body,
				"state": string(state), "commit_id": commit,
				"submitted_at": time.Now().UTC().Format(time.RFC3339)},
			"pull_request": s.ghPullJSON(p), "repository": s.ghRepoJSON(), "sender": s.ghUserJSON(login),
		})
	}
	switch state {
	case forge.ReviewApproved:
		return s.glMergeHook(p, login, "approved", "", nil)
	case forge.ReviewChangesRequested:
		rv := s.glUserJSON(login)
		rv["state"] = "requested_changes"
		return s.glMergeHook(p, login, "update", "", []map[string]any{rv})
	}
	return s.notePayload(p, login, body, "", 0)
}

// submitted returns the id and commit of the newest review AddReview submitted on
// pull number by login in state with body; 0 when there is none.
func (s *Server) submitted(number int64, login string, state forge.ReviewState, body string) (int64, string) {
	rs := s.reviews[number]
	for i := len(rs) - 1; i >= 0; i-- {
		if r := rs[i]; r.Login == login && r.State == state && r.Body == body {
			return r.ID, r.Commit
		}
	}
	return 0, ""
}

// NotePayload is a GitLab Note Hook on merge request number: a diff note on
// path:line when path is set.
func (s *Server) NotePayload(number int64, login, body, path string, line int) Payload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notePayload(s.mustPull(number), login, body, path, line)
}

// MergePayload is the delivery for pull number's merge (Merge it first): GitHub
// pull_request "closed" with merged true; GitLab Merge Request Hook "merge".
func (s *Server) MergePayload(number int64) Payload {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull(number)
	if s.kind == forge.GitHub {
		return s.ghPullHook(p, "closed", p.MergedBy, nil)
	}
	return s.glMergeHook(p, p.MergedBy, "merge", "", nil)
}

// ClosePayload is the delivery for pull number closed without a merge.
func (s *Server) ClosePayload(number int64, login string) Payload {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull(number)
	if s.kind == forge.GitHub {
		return s.ghPullHook(p, "closed", login, nil)
	}
	return s.glMergeHook(p, login, "close", "", nil)
}

// HeadMovedPayload is the delivery for new commits on pull number's head, which was
// at before: GitHub pull_request "synchronize"; GitLab Merge Request Hook "update"
// with oldrev.
func (s *Server) HeadMovedPayload(number int64, login, before string) Payload {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.mustPull(number)
	if s.kind == forge.GitHub {
		return s.ghPullHook(p, "synchronize", login, map[string]any{"before": before, "after": s.refSHA(p.Head)})
	}
	return s.glMergeHook(p, login, "update", before, nil)
}

// PushPayload is the push event for branch moving from before to its current commit.
func (s *Server) PushPayload(branch, login, before string) Payload {
	s.mu.Lock()
	defer s.mu.Unlock()
	after := s.refSHA(branch)
	if s.kind == forge.GitHub {
		return payload("push", map[string]any{
			"ref": "refs/heads/" + branch, "before": before, "after": after,
			"created": false, "deleted": false, "forced": false,
			"repository": s.ghRepoJSON(), "sender": s.ghUserJSON(login),
			"pusher":  map[string]any{"name": login, "email": login + "@example.test"},
			"commits": []any{}, "head_commit": map[string]any{"id": after},
		})
	}
	return payload("Push Hook", map[string]any{
		"object_kind": "push", "event_name": "push", "before": before, "after": after,
		"ref": "refs/heads/" + branch, "checkout_sha": after, "user_id": s.userID(login),
		"user_name": login, "user_username": login, "project_id": 1, "project": s.glProjectHookJSON(),
		"commits": []any{}, "total_commits_count": 1,
	})
}

func (s *Server) mustPull(number int64) *PullState {
	p := s.pull(number)
	if p == nil {
		s.t.Fatalf("forgetest: no pull %d", number)
	}
	return p
}

func (s *Server) ghRepoJSON() map[string]any {
	_, name, _ := strings.Cut(s.repo, "/")
	return map[string]any{"id": 1, "name": name, "full_name": s.repo, "clone_url": s.CloneURL(),
		"html_url": s.srv.URL + "/" + s.repo, "default_branch": "main"}
}

func (s *Server) ghPullHook(p *PullState, action, login string, extra map[string]any) Payload {
	body := map[string]any{"action": action, "number": p.Number, "pull_request": s.ghPullJSON(p),
		"repository": s.ghRepoJSON(), "sender": s.ghUserJSON(login)}
	for k, v := range extra {
		body[k] = v
	}
	return payload("pull_request", body)
}

func (s *Server) glProjectHookJSON() map[string]any {
	return map[string]any{"id": 1, "name": s.repo[strings.LastIndex(s.repo, "/")+1:],
		"path_with_namespace": s.repo, "web_url": s.srv.URL + "/" + s.repo,
		"git_http_url": s.CloneURL(), "http_url": s.CloneURL(), "default_branch": "main"}
}

func (s *Server) glMergeHook(p *PullState, login, action, oldrev string, reviewers []map[string]any) Payload {
	c := s.snapshot(p)
	attrs := s.glMRJSON(p)
	delete(attrs, "author")
	delete(attrs, "merge_user")
	delete(attrs, "merged_by")
	attrs["action"] = action
	attrs["url"] = attrs["web_url"]
	attrs["last_commit"] = map[string]any{"id": c.HeadSHA, "title": "head", "message": "head"}
	if oldrev != "" {
		attrs["oldrev"] = oldrev
	}
	if reviewers == nil {
		reviewers = []map[string]any{}
	}
	return payload("Merge Request Hook", map[string]any{
		"object_kind": "merge_request", "event_type": "merge_request", "user": s.glUserJSON(login),
		"project": s.glProjectHookJSON(), "object_attributes": attrs, "reviewers": reviewers,
	})
}

func (s *Server) notePayload(p *PullState, login, body, path string, line int) Payload {
	s.nextID++
	attrs := map[string]any{"id": s.nextID, "note": body, "noteable_type": "MergeRequest",
		"author_id": s.userID(login), "project_id": 1, "system": false, "action": "create",
		"url": fmt.Sprintf("%s/%s/-/merge_requests/%d#note_%d", s.srv.URL, s.repo, p.Number, s.nextID)}
	if path != "" {
		base := s.refSHA(p.Base)
		attrs["type"] = "DiffNote"
		attrs["position"] = map[string]any{"base_sha": base, "start_sha": base,
			"head_sha": s.refSHA(p.Head), "position_type": "text", "new_path": path, "new_line": line}
	}
	return payload("Note Hook", map[string]any{
		"object_kind": "note", "event_type": "note", "user": s.glUserJSON(login), "project_id": 1,
		"project": s.glProjectHookJSON(), "object_attributes": attrs,
		"merge_request": map[string]any{"id": 7000 + p.Number, "iid": p.Number,
			"source_branch": p.Head, "target_branch": p.Base, "title": p.Title, "state": "opened"},
	})
}
