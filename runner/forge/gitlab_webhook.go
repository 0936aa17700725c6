package forge

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// signingTokenPrefix marks a GitLab webhook signing token (Standard Webhooks'
// "whsec_" + base64 of a 32-byte key), as opposed to a plain secret token.
const signingTokenPrefix = "whsec_"

// ParseGitLabWebhook is the WebhookParser for GitLab. secret is either the webhook's
// secret token, compared in constant time with X-Gitlab-Token, or — when it starts
// with "whsec_" — its signing token: GitLab (2026, behind the webhook_signing_token
// flag) then signs "{webhook-id}.{webhook-timestamp}.{body}" with HMAC-SHA256 in the
// Standard Webhooks headers webhook-id, webhook-timestamp and webhook-signature
// ("v1,<base64>"), which is verified, timestamp within five minutes. To require both,
// use GitLabWebhookParser.
func ParseGitLabWebhook(r *http.Request, secret string) (Event, error) {
	if strings.HasPrefix(secret, signingTokenPrefix) {
		return GitLabWebhookParser("", secret)(r, "")
	}
	return GitLabWebhookParser(secret, "")(r, "")
}

// GitLabWebhookParser returns a WebhookParser that checks the secret token
// (X-Gitlab-Token) when secretToken is set and the Standard Webhooks signature when
// signingToken is set; at least one must be. The parser's own secret argument is
// unused. Nothing is parsed before the checks pass.
//
// It maps, for the merge request it names (Number = iid):
//
//   - Merge Request Hook "update" with oldrev → EventHeadMoved, HeadSHA last_commit.id;
//   - "merge" → EventMerged (MergeSHA merge_commit_sha, Actor user.username);
//   - "close" → EventClosed;
//   - "approved" or "approval" → EventReview approved by user.username;
//   - any other action whose payload lists user.username among reviewers with state
//     requested_changes → EventReview changes_requested, ID "changes:<user id>" (the
//     same for every such delivery: read Reviews for the notes and the round's ID);
//   - Note Hook on a merge request (not system) → EventReview commented, ID
//     "note:<id>", body "path:line: text" for a diff note;
//   - Push Hook to refs/heads/B → EventHeadMoved, Head B, HeadSHA after, Number 0;
//   - everything else → EventIgnored.
//
// Delivery is X-Gitlab-Event-UUID, else Idempotency-Key, else webhook-id; one is
// required.
func GitLabWebhookParser(secretToken, signingToken string) WebhookParser {
	return func(r *http.Request, _ string) (Event, error) {
		if secretToken == "" && signingToken == "" {
			return Event{}, errors.New("forge: gitlab webhook: no secret configured; set the webhook's secret token (or signing token) on both sides")
		}
		if secretToken != "" {
			got := gitlab.HookEventToken(r)
			if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(secretToken)) != 1 {
				return Event{}, errors.New("forge: gitlab webhook: X-Gitlab-Token missing or wrong; refused")
			}
		}
		body, err := readCapped(r)
		if err != nil {
			return Event{}, err
		}
		if signingToken != "" {
			wh, err := standardwebhooks.NewWebhook(signingToken)
			if err != nil {
				return Event{}, errors.New("forge: gitlab webhook: the signing token is not whsec_<base64>")
			}
			if err := wh.Verify(body, r.Header); err != nil {
				return Event{}, fmt.Errorf("forge: gitlab webhook: signature: %w", err)
			}
		}
		return parseGitLabBody(r, body)
	}
}

func parseGitLabBody(r *http.Request, body []byte) (Event, error) {
	delivery := r.Header.Get("X-Gitlab-Event-UUID")
	if delivery == "" {
		delivery = r.Header.Get("Idempotency-Key")
	}
	if delivery == "" {
		delivery = r.Header.Get(standardwebhooks.HeaderWebhookID)
	}
	if delivery == "" {
		return Event{}, errors.New("forge: gitlab webhook: no X-Gitlab-Event-UUID header; refused")
	}
	ev := Event{Delivery: delivery, Kind: EventIgnored}
	kind := gitlab.HookEventType(r)
	switch kind {
	case gitlab.EventTypeMergeRequest, gitlab.EventTypeNote, gitlab.EventTypePush:
	default:
		return ev, nil // other kinds are not ours; the library may not even know them
	}
	parsed, err := gitlab.ParseWebhook(kind, body)
	if err != nil {
		return Event{}, fmt.Errorf("forge: gitlab webhook %s: %w", kind, err)
	}
	switch e := parsed.(type) {
	case *gitlab.MergeEvent:
		gitLabMergeEvent(&ev, e, body)
	case *gitlab.MergeCommentEvent:
		gitLabNoteEvent(&ev, e)
	case *gitlab.PushEvent:
		if strings.HasPrefix(e.Ref, "refs/heads/") && strings.Trim(e.After, "0") != "" {
			ev.Kind = EventHeadMoved
			ev.Head = strings.TrimPrefix(e.Ref, "refs/heads/")
			ev.HeadSHA = e.After
			ev.Actor = e.UserUsername
		}
	}
	return ev, nil
}

// reviewerStates reads reviewers[].state, which client-go's EventUser does not carry.
type reviewerStates struct {
	Reviewers []struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
		State    string `json:"state"`
	} `json:"reviewers"`
}

func gitLabMergeEvent(ev *Event, e *gitlab.MergeEvent, body []byte) {
	a := e.ObjectAttributes
	ev.Number = a.IID
	ev.Head = a.SourceBranch
	ev.HeadSHA = a.LastCommit.ID
	if e.User != nil {
		ev.Actor = e.User.Username
	}
	switch a.Action {
	case "update":
		if a.OldRev != "" {
			ev.Kind = EventHeadMoved
			return
		}
	case "merge":
		ev.Kind = EventMerged
		ev.MergeSHA = a.MergeCommitSHA
		return
	case "close":
		ev.Kind = EventClosed
		return
	case "approved", "approval":
		ev.Kind = EventReview
		ev.Review = &Review{
			ID: fmt.Sprintf("approval:%d@%s", userID(e.User), ev.HeadSHA), Author: ev.Actor,
			State: ReviewApproved, CommitSHA: ev.HeadSHA,
		}
		return
	}
	var rs reviewerStates
	if json.Unmarshal(body, &rs) != nil || e.User == nil {
		return
	}
	for _, rv := range rs.Reviewers {
		if rv.State == "requested_changes" && rv.Username == e.User.Username {
			ev.Kind = EventReview
			ev.Review = &Review{
				ID: fmt.Sprintf("changes:%d", rv.ID), Author: rv.Username,
				State: ReviewChangesRequested, CommitSHA: ev.HeadSHA,
			}
			return
		}
	}
}

func gitLabNoteEvent(ev *Event, e *gitlab.MergeCommentEvent) {
	a := e.ObjectAttributes
	if a.System {
		return
	}
	ev.Kind = EventReview
	ev.Number = e.MergeRequest.IID
	ev.Head = e.MergeRequest.SourceBranch
	if e.User != nil {
		ev.Actor = e.User.Username
	}
	n := &gitlab.Note{ID: a.ID, Body: a.Note, Position: a.Position, CommitID: a.CommitID}
	ev.Review = &Review{
		ID: "note:" + itoa(a.ID), Author: ev.Actor, State: ReviewCommented,
		Body: noteText(n), CommitSHA: noteCommit(n),
	}
}

func userID(u *gitlab.EventUser) int64 {
	if u == nil {
		return 0
	}
	return u.ID
}
