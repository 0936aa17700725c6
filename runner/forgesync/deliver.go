package forgesync

import (
	"context"
	"net/http"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/forge"
)

// Delivery is what a webhook delivery came to.
type Delivery struct {
	Kind   forge.EventKind `json:"kind"`
	TaskID int64           `json:"task_id,omitempty"` // 0: no task of Countersign's
}

// Deliver takes a webhook delivery for forge name: it checks the signature with the
// forge's secret (EUNAUTHORIZED, and nothing changes, when it does not match), refuses
// a delivery id already received (ECONFLICT: a replay), then acts on the event as a
// poll would — a review, a merge, a close, a head that moved — and wakes the sync.
// The body is never logged or kept.
func (s *Syncer) Deliver(ctx context.Context, name string, r *http.Request) (Delivery, error) {
	f, err := s.store.GetForgeByName(ctx, name)
	if err != nil {
		return Delivery{}, err
	}
	parse := forge.ParseGitHubWebhook
	if f.Kind == models.ForgeGitLab {
		parse = forge.ParseGitLabWebhook
	}
	ev, err := parse(r, f.WebhookSecret)
	if err != nil {
		return Delivery{}, &models.Error{Code: models.EUNAUTHORIZED, Message: "the delivery's signature does not match forge " + f.Name + "'s webhook secret"}
	}
	if ev.Delivery == "" {
		return Delivery{}, models.Errorf(models.EBADREQUEST, "the delivery carries no delivery id")
	}
	err = s.inTx(ctx, func(tx models.ForgeTx) error { return tx.AddForgeDelivery(ctx, f.ID, ev.Delivery, s.cfg.Forges.Now()) })
	if err != nil {
		return Delivery{}, err
	}
	out := Delivery{Kind: ev.Kind}
	if ev.Kind == forge.EventIgnored {
		return out, nil
	}
	p, err := s.pullFor(ctx, f, &ev)
	if err != nil || p == nil {
		return out, err
	}
	out.TaskID = p.TaskID
	defer s.Wake()
	tg, err := s.load(ctx, p.TaskID, p)
	if err == nil {
		err = s.apply(ctx, tg, &ev)
	}
	if err != nil {
		// The forge is told the delivery arrived; the next poll or round repairs.
		s.settle(ctx, p, err)
	}
	return out, nil
}

// pullFor finds the pull request an event is about: by number, or for a push by the
// branch of an open one. nil when it is none of Countersign's.
func (s *Syncer) pullFor(ctx context.Context, f *models.Forge, ev *forge.Event) (*models.ForgePull, error) {
	if ev.Number > 0 {
		p, err := s.store.FindForgePull(ctx, f.ID, ev.Number)
		if models.ErrorCode(err) == models.ENOTFOUND {
			return nil, nil
		}
		return p, err
	}
	if ev.Head == "" {
		return nil, nil
	}
	pulls, err := s.store.ListOpenForgePulls(ctx)
	if err != nil {
		return nil, err
	}
	for i := range pulls {
		if pulls[i].ForgeID != f.ID {
			continue
		}
		t, err := s.store.GetTask(ctx, pulls[i].TaskID)
		if err != nil {
			return nil, err
		}
		if t.Branch == ev.Head {
			return &pulls[i], nil
		}
	}
	return nil, nil
}

func (s *Syncer) apply(ctx context.Context, tg *target, ev *forge.Event) error {
	switch ev.Kind {
	case forge.EventReview:
		if ev.Review == nil {
			return nil
		}
		if ev.Review.State == forge.ReviewChangesRequested {
			// The event carries the review's text at most, never its line comments
			// (GitLab's not even the text): the API has them all, under the id a poll
			// gives them, so the request is acted on once, with every word.
			return s.poll(ctx, tg)
		}
		return s.review(ctx, tg, ev.Review)
	case forge.EventMerged:
		return s.merged(ctx, tg, ev.MergeSHA, ev.Actor, ev.HeadSHA)
	case forge.EventClosed:
		return s.closed(ctx, tg, ev.Actor)
	case forge.EventHeadMoved:
		return s.moved(ctx, tg, ev.HeadSHA)
	}
	return nil
}
