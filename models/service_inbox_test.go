package models_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
)

// inboxEnv is a service over a fresh store with a lead, an exec, a developer and a
// worker.
type inboxEnv struct {
	t      *testing.T
	ctx    context.Context
	db     *store.DB
	svc    *models.Service
	agents map[string]*models.Agent
}

func newInboxEnv(t *testing.T, dialect string) *inboxEnv {
	t.Helper()
	db := storetest.Open(t, dialect)
	e := &inboxEnv{t: t, ctx: context.Background(), db: db, svc: models.NewService(db, ledger.Composer{}), agents: map[string]*models.Agent{}}
	for _, a := range []*models.Agent{
		{Name: "lead", Kind: models.KindHuman, Roles: []string{models.RoleLead}},
		{Name: "exec", Kind: models.KindHuman, Roles: []string{models.RoleExec}},
		{Name: "dev", Kind: models.KindHuman, Roles: []string{"developer"}},
		{Name: "bot", Kind: models.KindWorker, Roles: []string{"developer"}, Command: "true"},
	} {
		if err := e.svc.Agents.CreateAgent(e.ctx, models.System, a, "correct horse battery"); err != nil {
			t.Fatalf("agent %s: %v", a.Name, err)
		}
		e.agents[a.Name] = a
	}
	return e
}

// workerTask creates a task for the worker and has the runner start it.
func (e *inboxEnv) workerTask(title string) (*models.Task, *models.Agent) {
	e.t.Helper()
	task, err := e.svc.Tasks.CreateTask(e.ctx, models.System, models.TaskSpec{Title: title, Brief: "Brief of " + title,
		Role: "developer", Assignee: "bot",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "out/{task_id}.md", MaxAttempts: 2}}})
	if err != nil {
		e.t.Fatal(err)
	}
	runner, err := e.svc.Agents.RunnerAgent(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.svc.Tasks.TaskAction(e.ctx, runner, task.ID, models.ActStart, models.ActionInput{}); err != nil {
		e.t.Fatal(err)
	}
	return task, runner
}

// advisory returns the open advisory item of a task the runner passed as advisory.
func (e *inboxEnv) advisory(title string) models.InboxItem {
	e.t.Helper()
	task, runner := e.workerTask(title)
	err := e.db.InTx(e.ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx, task.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.RunnerPass(e.ctx, tx, runner, lt, "looked into it", "", true)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.onlyItem(task.ID, models.InboxAdvisory)
}

// blocked returns the open inbox item of a task the runner blocked.
func (e *inboxEnv) blocked(title string) models.InboxItem {
	e.t.Helper()
	task, runner := e.workerTask(title)
	err := e.db.InTx(e.ctx, func(tx models.Tx) error {
		lt, err := tx.LockTask(e.ctx, task.ID)
		if err != nil {
			return err
		}
		return e.svc.Attempts.BlockTask(e.ctx, tx, runner, lt, []models.BlockedAttempt{{Attempt: 1, Stage: models.StageMechanical, Failure: "missing"}})
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.onlyItem(task.ID, models.InboxBlocked)
}

func (e *inboxEnv) onlyItem(taskID int64, kind string) models.InboxItem {
	e.t.Helper()
	items, err := e.db.ListInbox(e.ctx, models.InboxFilter{TaskID: taskID, Kind: kind})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(items) != 1 {
		e.t.Fatalf("task %d: %d open %s items, want 1", taskID, len(items), kind)
	}
	return items[0]
}

func (e *inboxEnv) item(id int64) *models.InboxItem {
	e.t.Helper()
	it, err := e.db.GetInboxItem(e.ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return it
}

// resolvedEvents returns the inbox.resolved events of item id.
func (e *inboxEnv) resolvedEvents(id int64) []models.Event {
	e.t.Helper()
	var out []models.Event
	after := int64(0)
	for {
		evs, err := e.db.ListEvents(e.ctx, after, 1000)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(evs) == 0 {
			return out
		}
		for _, ev := range evs {
			var d struct {
				InboxID int64 `json:"inbox_id"`
			}
			if ev.Type == "inbox.resolved" && json.Unmarshal(ev.Data, &d) == nil && d.InboxID == id {
				out = append(out, ev)
			}
		}
		after = evs[len(evs)-1].ID
	}
}

func (e *inboxEnv) lastEventID() int64 {
	e.t.Helper()
	id, err := e.db.LastEventID(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func wantCode(t *testing.T, what string, err error, code string) *models.Error {
	t.Helper()
	if got := models.ErrorCode(err); got != code {
		t.Fatalf("%s: error %v (code %q), want %s", what, err, got, code)
	}
	me, _ := err.(*models.Error)
	return me
}

// TestResolveInboxItem: only a lead or an exec may dismiss, only advisory items, only
// once; the item records who, when and the note, and the inbox.resolved event is
// written with it. Refusals change nothing.
// checkLeadDismissesPlainly checks that a lead may dismiss an advisory item too, and
// that without a note the resolution says so plainly.
func checkLeadDismissesPlainly(t *testing.T, e *inboxEnv) {
	t.Helper()
	adv2 := e.advisory("look at the flaky test")
	got, err := e.svc.Inbox.ResolveInboxItem(e.ctx, e.agents["lead"], adv2.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if got.Resolution != "dismissed" || got.ResolvedBy == nil || *got.ResolvedBy != e.agents["lead"].ID {
		t.Errorf("lead's dismissal %+v", got)
	}
}

func TestResolveInboxItem(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			e := newInboxEnv(t, dialect)
			at := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
			adv, blk := e.advisory("investigate the slow API"), e.blocked("write the report")
			e.svc.SetClock(func() time.Time { return at })

			// A developer is refused, naming the rule; nothing changes.
			before := e.lastEventID()
			_, err := e.svc.Inbox.ResolveInboxItem(e.ctx, e.agents["dev"], adv.ID, "seen")
			if me := wantCode(t, "developer", err, models.EFORBIDDEN); me.Rule != "lead_or_exec" {
				t.Errorf("developer refused with rule %q, want lead_or_exec", me.Rule)
			}
			if e.item(adv.ID).Resolved || e.lastEventID() != before {
				t.Fatal("a refused dismissal changed something")
			}

			// A blocked item waits for its task's actions.
			_, err = e.svc.Inbox.ResolveInboxItem(e.ctx, e.agents["exec"], blk.ID, "")
			if me := wantCode(t, "blocked item", err, models.ECONFLICT); !strings.Contains(me.Message, "only advisory items") {
				t.Errorf("blocked refusal says %q", me.Message)
			}
			if e.item(blk.ID).Resolved || e.lastEventID() != before {
				t.Fatal("dismissing a blocked item changed something")
			}

			// Unknown items and overlong notes.
			_, err = e.svc.Inbox.ResolveInboxItem(e.ctx, e.agents["exec"], adv.ID+blk.ID+100, "")
			wantCode(t, "unknown item", err, models.ENOTFOUND)
			_, err = e.svc.Inbox.ResolveInboxItem(e.ctx, e.agents["exec"], adv.ID, strings.Repeat("é", 2001))
			if me := wantCode(t, "long note", err, models.EINVALID); me.Fields["note"] == "" {
				t.Errorf("long note: no message for note: %v", me.Fields)
			}

			// The exec dismisses it.
			got, err := e.svc.Inbox.ResolveInboxItem(e.ctx, e.agents["exec"], adv.ID, "  read it, nothing to do  ")
			if err != nil {
				t.Fatal(err)
			}
			stored := e.item(adv.ID)
			for _, it := range []*models.InboxItem{got, stored} {
				if !it.Resolved || it.ResolvedBy == nil || *it.ResolvedBy != e.agents["exec"].ID ||
					it.ResolvedAt == nil || !it.ResolvedAt.Equal(at) || it.Resolution != "dismissed: read it, nothing to do" {
					t.Fatalf("resolved item %+v", it)
				}
			}
			if open, _ := e.db.ListInbox(e.ctx, models.InboxFilter{Kind: models.InboxAdvisory}); len(open) != 0 {
				t.Errorf("advisory items still open: %+v", open)
			}
			evs := e.resolvedEvents(adv.ID)
			if len(evs) != 1 {
				t.Fatalf("%d inbox.resolved events, want 1", len(evs))
			}
			ev := evs[0]
			if ev.ActorID == nil || *ev.ActorID != e.agents["exec"].ID || ev.TaskID == nil || *ev.TaskID != adv.TaskID ||
				!strings.Contains(string(ev.Data), `"resolution":"dismissed: read it, nothing to do"`) {
				t.Errorf("event %+v data %s", ev, ev.Data)
			}

			// Twice is a conflict, for the lead as well, and writes nothing.
			before = e.lastEventID()
			_, err = e.svc.Inbox.ResolveInboxItem(e.ctx, e.agents["lead"], adv.ID, "")
			if me := wantCode(t, "second dismissal", err, models.ECONFLICT); !strings.Contains(me.Message, "already resolved") {
				t.Errorf("second dismissal says %q", me.Message)
			}
			if e.lastEventID() != before || e.item(adv.ID).Resolution != "dismissed: read it, nothing to do" {
				t.Fatal("a second dismissal changed something")
			}

			checkLeadDismissesPlainly(t, e)
		})
	}
}

// TestResolveInboxItemConcurrently: of several people dismissing one item at once,
// exactly one succeeds, the others get a conflict, and one event is written. On
// PostgreSQL the pool is warmed first, so that the dismissals really overlap instead
// of queueing behind new connections.
func TestResolveInboxItemConcurrently(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			e := newInboxEnv(t, dialect)
			const n = 5 // the PostgreSQL pool keeps 5 idle connections
			for round := range 4 {
				adv := e.advisory("investigate the slow API " + strings.Repeat("!", round))
				if dialect == store.DialectPostgres {
					e.warmPool(n)
				}
				errs := make([]error, n)
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range n {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						who := []string{"lead", "exec"}[i%2]
						_, errs[i] = e.svc.Inbox.ResolveInboxItem(e.ctx, e.agents[who], adv.ID, "")
					}()
				}
				close(start)
				wg.Wait()
				won := 0
				for i, err := range errs {
					switch models.ErrorCode(err) {
					case "":
						won++
					case models.ECONFLICT:
					default:
						t.Errorf("round %d, dismissal %d: %v", round, i, err)
					}
				}
				if won != 1 {
					t.Errorf("round %d: %d dismissals succeeded, want 1", round, won)
				}
				if evs := e.resolvedEvents(adv.ID); len(evs) != 1 {
					t.Errorf("round %d: %d inbox.resolved events, want 1", round, len(evs))
				}
			}
		})
	}
}

// warmPool has n transactions open at once, so that the pool holds n connections.
func (e *inboxEnv) warmPool(n int) {
	e.t.Helper()
	var in, out sync.WaitGroup
	hold := make(chan struct{})
	for range n {
		in.Add(1)
		out.Add(1)
		go func() {
			defer out.Done()
			err := e.db.InTx(e.ctx, func(tx models.Tx) error {
				_, err := tx.LastEventID(e.ctx)
				in.Done()
				<-hold
				return err
			})
			if err != nil {
				e.t.Error(err)
			}
		}()
	}
	in.Wait()
	close(hold)
	out.Wait()
}

// TestCanResolveInbox: the pages' guess follows the service's rule.
func TestCanResolveInbox(t *testing.T) {
	for _, c := range []struct {
		roles []string
		want  bool
	}{
		{[]string{models.RoleLead}, true},
		{[]string{models.RoleExec}, true},
		{[]string{"developer", models.RoleAdmin}, false},
		{nil, false},
	} {
		if got := models.CanResolveInbox(&models.Agent{Roles: c.roles}); got != c.want {
			t.Errorf("roles %v: %v, want %v", c.roles, got, c.want)
		}
	}
	if models.CanResolveInbox(nil) {
		t.Error("nil agent may resolve")
	}
}
