package models

import (
	"context"
	"slices"
	"time"
)

// WriteBehind is a Tx that holds the writes of a runner's claim until Flush, so that
// a batch of claimed tasks costs one statement per table rather than one round trip per
// write (issue #34): the task rows (UpdateTask, the last write of a task wins), the
// attempt rows (CreateAttempt), the attempt tokens (CreateToken) and the events
// (AppendEvent, AppendEvents) go out together, through a BatchWriter when the store has
// one (one multi-row statement per table), row by row otherwise.
//
// It promises that nothing reads around what it holds: every Tx method it neither holds
// nor serves flushes first, in the order the writes were made, so a read (a goal's
// tasks for its state, a budget's spend) sees every earlier write of the claim, and
// events keep their order. It serves without a flush only reads that held writes cannot
// change: GetAgent (the claim writes no agent; read once per agent), GetRules (no rule
// either), GetTasks and ListAttempts unless they name a task with held writes.
//
// Mark and Undo bound one task's try: Undo drops what was held since Mark, which is how
// a claim the rules refuse leaves nothing behind for that task. Held rows have no ID
// until Flush, which sets the IDs in the very values the callers passed.
type WriteBehind struct {
	tx     Tx
	batch  BatchWriter // nil: row by row
	tasks  []*Task     // copies, one per task, last write
	atts   []*Attempt
	toks   []*Token
	events []*Event
	attUps []*Attempt // updates of attempts that have an ID, one per attempt, last write
	agents map[int64]*Agent
	locked map[int64]*Task // PrefetchLocks
	// taskAtts are tasks' attempts PrefetchAttempts read, until a flush writes some.
	taskAtts map[int64][]Attempt
	rules    *ProjectRules // read once
	// taskEvents are tasks' events read (ListTaskEvents), until a flush writes some.
	taskEvents map[taskEventsKey][]Event
	// flushedToks are the tokens flushed so far, for TokenID.
	flushedToks []*Token
	flushes     int // Flushes that wrote something
}

// HeldWrites is what a WriteBehind flushes, in that order: tasks, new attempts,
// updated attempts, tokens.
type HeldWrites struct {
	Tasks          []*Task
	Attempts       []*Attempt
	AttemptUpdates []*Attempt
	Tokens         []*Token
}

// BatchWriter is a store transaction that writes held rows with one statement per
// table: it updates the tasks (each a whole row, as UpdateTask), inserts the attempts
// and tokens (as CreateAttempt and CreateToken) and sets their IDs, and updates the
// attempts of AttemptUpdates (each a whole row, as UpdateAttempt).
type BatchWriter interface {
	WriteHeld(ctx context.Context, h HeldWrites) error
}

// NewWriteBehind returns a WriteBehind over tx; batch may be nil.
func NewWriteBehind(tx Tx, batch BatchWriter) *WriteBehind {
	return &WriteBehind{tx: tx, batch: batch, agents: map[int64]*Agent{}, taskEvents: map[taskEventsKey][]Event{}}
}

// WriteMark is where a task's try began (see WriteBehind.Mark).
type WriteMark struct {
	tasks            []*Task
	attUps           []*Attempt
	atts, toks, evts int
	flushes          int
}

// Mark returns the point Undo goes back to.
func (w *WriteBehind) Mark() WriteMark {
	return WriteMark{tasks: slices.Clone(w.tasks), atts: len(w.atts), toks: len(w.toks), evts: len(w.events),
		attUps: slices.Clone(w.attUps), flushes: w.flushes}
}

// Undo drops what was held since m; what a flush already wrote stays (the caller's
// next try rewrites the task's row whole).
func (w *WriteBehind) Undo(m WriteMark) {
	if w.flushes != m.flushes {
		w.tasks, w.atts, w.toks, w.events, w.attUps = nil, nil, nil, nil, nil // flushed since: what is held is the try's
		return
	}
	w.tasks, w.atts, w.toks, w.events = m.tasks, w.atts[:m.atts], w.toks[:m.toks], w.events[:m.evts]
	w.attUps = m.attUps
}

// Held reports whether anything waits for Flush.
func (w *WriteBehind) Held() bool {
	return len(w.tasks)+len(w.atts)+len(w.toks)+len(w.events)+len(w.attUps) > 0
}

// Flush writes what is held: tasks, attempts, tokens, then the events, and sets the
// held rows' IDs.
func (w *WriteBehind) Flush(ctx context.Context) error {
	if !w.Held() {
		return nil
	}
	h := HeldWrites{Tasks: w.tasks, Attempts: w.atts, AttemptUpdates: w.attUps, Tokens: w.toks}
	events := w.events
	w.flushedToks = append(w.flushedToks, w.toks...)
	w.flushes++
	w.tasks, w.atts, w.toks, w.events, w.attUps = nil, nil, nil, nil, nil
	w.forgetAttempts(h)
	if w.batch != nil && len(h.Tasks)+len(h.Attempts)+len(h.AttemptUpdates)+len(h.Tokens) > 0 {
		if err := w.batch.WriteHeld(ctx, h); err != nil {
			return err
		}
	} else if err := w.rowByRow(ctx, h); err != nil {
		return err
	}
	w.lockedAsWritten(h.Tasks)
	if len(events) == 0 {
		return nil
	}
	for _, e := range events {
		if e.TaskID != nil {
			for k := range w.taskEvents {
				if k.task == *e.TaskID {
					delete(w.taskEvents, k)
				}
			}
		}
	}
	return w.tx.AppendEvents(ctx, events)
}

func (w *WriteBehind) rowByRow(ctx context.Context, h HeldWrites) error {
	for _, t := range h.Tasks {
		if err := w.tx.UpdateTask(ctx, t); err != nil {
			return err
		}
	}
	for _, a := range h.Attempts {
		if err := w.tx.CreateAttempt(ctx, a); err != nil {
			return err
		}
	}
	for _, a := range h.AttemptUpdates {
		if err := w.tx.UpdateAttempt(ctx, a); err != nil {
			return err
		}
	}
	for _, t := range h.Tokens {
		if err := w.tx.CreateToken(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// UpdateTask holds a copy of t, replacing an earlier held write of the same task.
func (w *WriteBehind) UpdateTask(_ context.Context, t *Task) error {
	t.UpdatedAt = time.Now().UTC().Truncate(time.Microsecond)
	w.tasks = holdLatest(w.tasks, *t, func(h *Task) bool { return h.ID == t.ID })
	return nil
}

// holdLatest returns held with a copy of v in place of the held value same picks, or
// appended when there is none. The slice is copied before a value is replaced in
// place: a WriteMark may share the old one.
func holdLatest[T any](held []*T, v T, same func(*T) bool) []*T {
	if i := slices.IndexFunc(held, same); i >= 0 {
		held = slices.Clone(held)
		held[i] = &v
		return held
	}
	return append(held, &v)
}

// CreateAttempt holds a, whose ID Flush sets.
func (w *WriteBehind) CreateAttempt(_ context.Context, a *Attempt) error {
	if a.StartedAt.IsZero() {
		a.StartedAt = time.Now().UTC()
	}
	if a.Outcome == "" {
		a.Outcome = OutcomeRunning
	}
	w.atts = append(w.atts, a)
	return nil
}

// CreateToken holds t, whose ID Flush sets.
func (w *WriteBehind) CreateToken(_ context.Context, t *Token) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now().UTC()
	}
	w.toks = append(w.toks, t)
	return nil
}

// TokenID is the ID Flush gave the held token with this hash; 0 when none.
func (w *WriteBehind) TokenID(hash string) int64 {
	for _, t := range w.flushedToks {
		if t.Hash == hash {
			return t.ID
		}
	}
	return 0
}

// AppendEvent holds e until Flush.
func (w *WriteBehind) AppendEvent(_ context.Context, e *Event) error {
	w.events = append(w.events, e)
	return nil
}

// AppendEvents holds es until Flush.
func (w *WriteBehind) AppendEvents(_ context.Context, es []*Event) error {
	w.events = append(w.events, es...)
	return nil
}

// BeforeCommit registers fn with the Tx underneath (Flush comes before the commit).
func (w *WriteBehind) BeforeCommit(fn func()) { w.tx.BeforeCommit(fn) }

// GetAgent reads an agent once per WriteBehind: the claim writes no agent.
func (w *WriteBehind) GetAgent(ctx context.Context, id int64) (*Agent, error) {
	if a, ok := w.agents[id]; ok {
		c := *a
		return &c, nil
	}
	a, err := w.tx.GetAgent(ctx, id)
	if err != nil {
		return nil, err
	}
	c := *a
	w.agents[id] = &c
	return a, nil
}

// GetAgentByName reads an agent once per WriteBehind, as GetAgent.
func (w *WriteBehind) GetAgentByName(ctx context.Context, name string) (*Agent, error) {
	for _, a := range w.agents {
		if a.Name == name {
			c := *a
			return &c, nil
		}
	}
	a, err := w.tx.GetAgentByName(ctx, name)
	if err != nil {
		return nil, err
	}
	c := *a
	w.agents[a.ID] = &c
	return a, nil
}

// forgetAgents drops the agents read: one is being written through w.
func (w *WriteBehind) forgetAgents() { clear(w.agents) }

// GetRules reads the rules once per WriteBehind, without a flush: the claim writes
// no rule (SaveRules through w forgets what was read).
func (w *WriteBehind) GetRules(ctx context.Context) (*ProjectRules, error) {
	if w.rules == nil {
		r, err := w.tx.GetRules(ctx)
		if err != nil {
			return nil, err
		}
		w.rules = r
	}
	c := *w.rules
	return &c, nil
}

// SaveRules flushes, then saves r.
func (w *WriteBehind) SaveRules(ctx context.Context, r *ProjectRules) error {
	w.rules = nil
	if err := w.Flush(ctx); err != nil {
		return err
	}
	return w.tx.SaveRules(ctx, r)
}

// ListTaskEvents serves a task's events from what PrefetchTaskEvents or an earlier
// call read, unless an event of the task is held (then it flushes and reads): the
// claim's rule checks read a task's hat history once per move. Only this claim writes
// such events of a task it holds locked, so what was read stays true until a flush
// writes some, which forgets them.
func (w *WriteBehind) ListTaskEvents(ctx context.Context, taskID int64, limit int) ([]Event, error) {
	if slices.ContainsFunc(w.events, func(e *Event) bool { return e.TaskID != nil && *e.TaskID == taskID }) {
		if err := w.Flush(ctx); err != nil {
			return nil, err
		}
	}
	if es, ok := w.taskEvents[taskEventsKey{taskID, limit}]; ok {
		return slices.Clone(es), nil
	}
	es, err := w.tx.ListTaskEvents(ctx, taskID, limit)
	if err != nil {
		return nil, err
	}
	w.taskEvents[taskEventsKey{taskID, limit}] = slices.Clone(es)
	return es, nil
}

// taskEventsKey names what ListTaskEvents read.
type taskEventsKey struct {
	task  int64
	limit int
}

// TaskEventsReader is a store transaction that reads the newest events of several
// tasks in one statement: ListTaskEvents for each.
type TaskEventsReader interface {
	ListTasksEvents(ctx context.Context, taskIDs []int64, limit int) (map[int64][]Event, error)
}

// PrefetchTaskEvents reads, in one statement when r is not nil, the hat history the
// rules read of each of the tasks (ListTaskEvents with the rules' limit), so that
// claiming them costs no read each.
func (w *WriteBehind) PrefetchTaskEvents(ctx context.Context, r TaskEventsReader, taskIDs []int64) error {
	if r == nil || len(taskIDs) == 0 {
		return nil
	}
	byTask, err := r.ListTasksEvents(ctx, taskIDs, hatEventsLimit)
	if err != nil {
		return err
	}
	for _, id := range taskIDs {
		w.taskEvents[taskEventsKey{id, hatEventsLimit}] = byTask[id]
	}
	return nil
}

// GetTasks flushes first only when it names a task with a held write.
func (w *WriteBehind) GetTasks(ctx context.Context, ids []int64) ([]Task, error) {
	if slices.ContainsFunc(w.tasks, func(t *Task) bool { return slices.Contains(ids, t.ID) }) {
		if err := w.Flush(ctx); err != nil {
			return nil, err
		}
	}
	return w.tx.GetTasks(ctx, ids)
}
