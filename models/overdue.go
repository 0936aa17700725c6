package models

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Deadlines says, per inbox kind, how long an item may wait for a person before it
// is announced again and escalated to the lead; a kind without one never is. A
// question unanswered for twice its deadline blocks its task (stage question).
type Deadlines map[string]time.Duration

// DefaultDeadlines are the deadlines when none are configured.
var DefaultDeadlines = Deadlines{
	InboxQuestion:    4 * time.Hour,
	InboxBlocked:     24 * time.Hour,
	InboxEscalation:  24 * time.Hour,
	InboxDrift:       24 * time.Hour,
	InboxAgentPaused: 24 * time.Hour,
	InboxAdvisory:    72 * time.Hour,
}

// ParseDeadlines reads "kind=duration,…" (e.g. "question=2h,blocked=1d"; d is 24h)
// over the defaults; "kind=off" removes one. Unknown kinds and bad durations are
// errors naming them.
func ParseDeadlines(s string) (Deadlines, error) {
	d := Deadlines{}
	for k, v := range DefaultDeadlines {
		d[k] = v
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		kind, val, ok := strings.Cut(part, "=")
		kind, val = strings.TrimSpace(kind), strings.TrimSpace(val)
		if !ok || !slices.Contains(InboxKinds, kind) {
			return nil, fmt.Errorf("inbox deadline %q: want kind=duration with kind one of %s", part, strings.Join(InboxKinds, ", "))
		}
		if val == "off" {
			delete(d, kind)
			continue
		}
		dur, err := parseDays(val)
		if err != nil || dur <= 0 {
			return nil, fmt.Errorf("inbox deadline %q: %q is not a positive duration (30m, 4h, 2d)", part, val)
		}
		d[kind] = dur
	}
	return d, nil
}

// String lists the deadlines as ParseDeadlines reads them, sorted by kind.
func (d Deadlines) String() string {
	var parts []string
	for k, v := range d {
		parts = append(parts, k+"="+v.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Due is when item it becomes overdue; false when its kind has no deadline.
func (d Deadlines) Due(it *InboxItem) (time.Time, bool) {
	dur, ok := d[it.Kind]
	if !ok {
		return time.Time{}, false
	}
	return it.CreatedAt.Add(dur), true
}

func parseDays(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err != nil || fmt.Sprint(days) != n {
			return 0, fmt.Errorf("bad days %q", s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// SweepResult counts what a sweep of the inbox did.
type SweepResult struct {
	Escalated int // items announced again and escalated to the lead
	Expired   int // waiting tasks blocked because their question went unanswered
}

// SweepInbox announces again, and escalates to the lead, every open inbox item past
// its deadline that was not yet (an inbox.overdue event, the item marked escalated;
// once per item, whichever process sweeps first), and blocks each waiting task whose
// question is unanswered after twice its deadline (stage question), as the runner.
func (s *InboxService) SweepInbox(ctx context.Context, now time.Time, d Deadlines) (SweepResult, error) {
	var res SweepResult
	runner, err := s.agents.RunnerAgent(ctx)
	if err != nil {
		return res, err
	}
	items, err := s.store.ListInbox(ctx, InboxFilter{Limit: 1000})
	if err != nil {
		return res, err
	}
	for i := range items {
		it := &items[i]
		due, ok := d.Due(it)
		if !ok || now.Before(due) {
			continue
		}
		if it.Kind == InboxQuestion && !now.Before(due.Add(d[it.Kind])) {
			blocked, err := s.expireQuestion(ctx, runner, it, d[it.Kind]*2)
			if err != nil {
				return res, err
			}
			if blocked {
				res.Expired++
				continue
			}
		}
		if it.EscalatedAt != nil {
			continue
		}
		escalated, err := s.escalateItem(ctx, runner, it, now, due)
		if err != nil {
			return res, err
		}
		if escalated {
			res.Escalated++
		}
	}
	return res, nil
}

// escalateItem marks it escalated and announces it again, unless another sweep did.
func (s *InboxService) escalateItem(ctx context.Context, runner *Agent, it *InboxItem, now, due time.Time) (bool, error) {
	done := false
	err := s.store.InTx(ctx, func(tx Tx) error {
		ok, err := tx.EscalateInboxItem(ctx, it.ID, now)
		if err != nil || !ok {
			return err
		}
		done = true
		var taskID *int64
		if it.TaskID != 0 {
			taskID = &it.TaskID
		}
		return s.emit(ctx, tx, "inbox.overdue", runner, taskID, it.GoalID, map[string]any{
			"inbox_id": it.ID, "kind": it.Kind, "title": it.Title, "due": due, "waiting": now.Sub(it.CreatedAt).Round(time.Minute).String(),
			"escalated_to": RoleLead})
	})
	return done, err
}

// expireQuestion blocks it's waiting task, its question unanswered for waited.
func (s *InboxService) expireQuestion(ctx context.Context, runner *Agent, it *InboxItem, waited time.Duration) (bool, error) {
	blocked := false
	err := s.store.InTx(ctx, func(tx Tx) error {
		t, err := tx.LockTask(ctx, it.TaskID)
		if err != nil {
			return err
		}
		q := t.OpenQuestion()
		if t.State != TaskWaiting || q == nil {
			return nil
		}
		if err := s.resolveInbox(ctx, tx, runner, t.ID, InboxQuestion, "unanswered: the task is blocked"); err != nil {
			return err
		}
		blocked = true
		return s.attempts.BlockTask(ctx, tx, runner, t, []BlockedAttempt{{Attempt: q.Attempt, Stage: StageQuestion,
			Failure: fmt.Sprintf("the worker's question went unanswered for %s: %s", waited, q.Text)}})
	})
	return blocked, err
}
