package forge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-github/v75/github"
)

// ParseGitHubWebhook is the WebhookParser for GitHub. It reads at most 10 MiB, checks
// X-Hub-Signature-256 (HMAC-SHA256 of the body under secret) before parsing anything,
// and maps:
//
//   - pull_request_review "submitted" → EventReview (Review from the payload);
//   - pull_request "closed" and merged → EventMerged (MergeSHA, Actor = merged_by);
//     "closed" unmerged → EventClosed;
//   - pull_request "synchronize" → EventHeadMoved (HeadSHA = after, else head.sha);
//   - push to refs/heads/B → EventHeadMoved with Head B, HeadSHA after, Number 0
//     (a push does not name a pull; the caller looks the branch up);
//   - ping and everything else → EventIgnored.
//
// An empty secret, a missing or wrong signature, or a missing delivery id is an error.
func ParseGitHubWebhook(r *http.Request, secret string) (Event, error) {
	if secret == "" {
		return Event{}, errors.New("forge: github webhook: no secret configured; set the webhook secret on both sides")
	}
	sig := r.Header.Get(github.SHA256SignatureHeader)
	if sig == "" {
		return Event{}, errors.New("forge: github webhook: no X-Hub-Signature-256 header; refused")
	}
	body, err := readCapped(r)
	if err != nil {
		return Event{}, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	payload, err := github.ValidatePayload(r, []byte(secret))
	if err != nil {
		return Event{}, fmt.Errorf("forge: github webhook: %w", err)
	}
	delivery := github.DeliveryID(r)
	if delivery == "" {
		return Event{}, errors.New("forge: github webhook: no X-GitHub-Delivery header; refused")
	}
	ev := Event{Delivery: delivery, Kind: EventIgnored}
	kind := github.WebHookType(r)
	switch kind {
	case "pull_request", "pull_request_review", "push":
	default:
		return ev, nil // ping and every other kind are not ours to act on
	}
	parsed, err := github.ParseWebHook(kind, payload)
	if err != nil {
		return Event{}, fmt.Errorf("forge: github webhook %s: %w", kind, err)
	}
	switch e := parsed.(type) {
	case *github.PullRequestReviewEvent:
		gitHubReviewEvent(&ev, e)
	case *github.PullRequestEvent:
		gitHubPullEvent(&ev, e)
	case *github.PushEvent:
		ref := e.GetRef()
		if strings.HasPrefix(ref, "refs/heads/") && !e.GetDeleted() {
			ev.Kind = EventHeadMoved
			ev.Head = strings.TrimPrefix(ref, "refs/heads/")
			ev.HeadSHA = e.GetAfter()
			ev.Actor = e.GetSender().GetLogin()
		}
	}
	return ev, nil
}

func gitHubReviewEvent(ev *Event, e *github.PullRequestReviewEvent) {
	if e.GetAction() != "submitted" {
		return
	}
	rv := e.GetReview()
	state, ok := gitHubReviewState(rv.GetState())
	if !ok {
		return
	}
	ev.Kind = EventReview
	ev.Number = int64(e.GetPullRequest().GetNumber())
	ev.Head = e.GetPullRequest().GetHead().GetRef()
	ev.HeadSHA = e.GetPullRequest().GetHead().GetSHA()
	ev.Actor = rv.GetUser().GetLogin()
	ev.Review = &Review{
		ID:          "review:" + itoa(rv.GetID()),
		Author:      rv.GetUser().GetLogin(),
		State:       state,
		Body:        strings.TrimSpace(rv.GetBody()), // line comments come from Reviews
		CommitSHA:   rv.GetCommitID(),
		SubmittedAt: rv.GetSubmittedAt().Time,
	}
}

func gitHubPullEvent(ev *Event, e *github.PullRequestEvent) {
	p := e.GetPullRequest()
	ev.Number = int64(e.GetNumber())
	if ev.Number == 0 {
		ev.Number = int64(p.GetNumber())
	}
	ev.Head = p.GetHead().GetRef()
	ev.HeadSHA = p.GetHead().GetSHA()
	ev.Actor = e.GetSender().GetLogin()
	switch e.GetAction() {
	case "closed":
		if p.GetMerged() {
			ev.Kind = EventMerged
			ev.MergeSHA = p.GetMergeCommitSHA()
			ev.Actor = p.GetMergedBy().GetLogin()
		} else {
			ev.Kind = EventClosed
		}
	case "synchronize":
		ev.Kind = EventHeadMoved
		if a := e.GetAfter(); a != "" {
			ev.HeadSHA = a
		}
	}
}
