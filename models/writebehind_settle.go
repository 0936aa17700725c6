package models

import (
	"context"
	"slices"
)

// What WriteBehind holds and serves for a runner's settle (issue #34): a batch of
// attempts that finished together locks its tasks with one statement (PrefetchLocks),
// and the attempt rows' and task rows' updates go out with one statement each at
// Flush, instead of three round trips per attempt.

// TasksLocker is a store transaction that locks several tasks for update in one
// statement: LockTask for each, in ascending id order (so that two batches that share
// tasks lock them in the same order and cannot deadlock each other).
type TasksLocker interface {
	LockTasks(ctx context.Context, ids []int64) ([]Task, error)
}

// PrefetchLocks locks the tasks with these ids through l, in one statement, and
// serves LockTask for them from what it read. Without l (a store that cannot) it does
// nothing, and LockTask goes to the Tx one task at a time.
func (w *WriteBehind) PrefetchLocks(ctx context.Context, l TasksLocker, ids []int64) error {
	if l == nil || len(ids) == 0 {
		return nil
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	tasks, err := l.LockTasks(ctx, slices.Compact(ids))
	if err != nil {
		return err
	}
	if w.locked == nil {
		w.locked = make(map[int64]*Task, len(tasks))
	}
	for i := range tasks {
		w.locked[tasks[i].ID] = &tasks[i]
	}
	return nil
}

// LockTask serves a task PrefetchLocks locked, as this WriteBehind last wrote it (a
// held UpdateTask) or as it was read; any other task is read and locked by the Tx
// underneath, after a flush. The row stays locked until the transaction ends, so what
// was read stays true but for this transaction's own writes.
func (w *WriteBehind) LockTask(ctx context.Context, id int64) (*Task, error) {
	for _, t := range w.tasks {
		if t.ID == id && w.locked[id] != nil {
			c := *t
			return &c, nil
		}
	}
	if t, ok := w.locked[id]; ok {
		c := *t
		return &c, nil
	}
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.LockTask(ctx, id)
}

// lockedAsWritten keeps what LockTask serves of the locked tasks in step with what a
// flush wrote of them.
func (w *WriteBehind) lockedAsWritten(tasks []*Task) {
	for _, t := range tasks {
		if _, ok := w.locked[t.ID]; ok {
			c := *t
			w.locked[t.ID] = &c
		}
	}
}

// UpdateAttempt holds a copy of a (the last write of an attempt wins) when the
// attempt has an ID; one still held for creation is flushed first, to get one.
func (w *WriteBehind) UpdateAttempt(ctx context.Context, a *Attempt) error {
	if a.ID == 0 {
		if err := w.Flush(ctx); err != nil {
			return err
		}
		return w.tx.UpdateAttempt(ctx, a)
	}
	w.attUps = holdLatest(w.attUps, *a, func(h *Attempt) bool { return h.ID == a.ID })
	return nil
}

// Dependents asks the Tx underneath without a flush first: held writes never add or
// remove a dependency, so when it finds none (the store answers that from the lock it
// took, without a query) none there are. When it finds some, whose rows a held write
// may have changed, it flushes and asks again.
func (w *WriteBehind) Dependents(ctx context.Context, id int64) ([]Task, error) {
	deps, err := w.tx.Dependents(ctx, id)
	if err != nil || len(deps) == 0 || !w.Held() {
		return deps, err
	}
	if err := w.Flush(ctx); err != nil {
		return nil, err
	}
	return w.tx.Dependents(ctx, id)
}

// AppendLedgerEntry passes e to the Tx underneath without a flush: a transaction
// holds its ledger entries until it commits (Tx.AppendLedgerEntry), after the last
// flush, so the entry lands after every write held before it all the same.
func (w *WriteBehind) AppendLedgerEntry(ctx context.Context, e *LedgerEntry) error {
	return w.tx.AppendLedgerEntry(ctx, e)
}

// AttemptsReader is a store transaction that reads the attempts of several tasks in
// one statement: ListAttempts for each.
type AttemptsReader interface {
	ListTasksAttempts(ctx context.Context, taskIDs []int64) (map[int64][]Attempt, error)
}

// PrefetchAttempts reads, in one statement when r is not nil, the attempts of the
// tasks, and serves ListAttempts for them from what it read (with the held updates
// laid over) until a flush writes attempts of the task. The tasks must be locked by
// this transaction (PrefetchLocks), so that only it adds or changes their attempts.
func (w *WriteBehind) PrefetchAttempts(ctx context.Context, r AttemptsReader, taskIDs []int64) error {
	if r == nil || len(taskIDs) == 0 {
		return nil
	}
	byTask, err := r.ListTasksAttempts(ctx, taskIDs)
	if err != nil {
		return err
	}
	if w.taskAtts == nil {
		w.taskAtts = make(map[int64][]Attempt, len(taskIDs))
	}
	for _, id := range taskIDs {
		w.taskAtts[id] = byTask[id]
	}
	return nil
}

// ListAttempts flushes first only when a new attempt of the task is held; held
// updates of its attempts are laid over what PrefetchAttempts or the Tx underneath
// read.
func (w *WriteBehind) ListAttempts(ctx context.Context, taskID int64) ([]Attempt, error) {
	if slices.ContainsFunc(w.atts, func(a *Attempt) bool { return a.TaskID == taskID }) {
		if err := w.Flush(ctx); err != nil {
			return nil, err
		}
	}
	cached, ok := w.taskAtts[taskID]
	atts := slices.Clone(cached)
	if !ok {
		var err error
		if atts, err = w.tx.ListAttempts(ctx, taskID); err != nil {
			return nil, err
		}
	}
	for i := range atts {
		for _, u := range w.attUps {
			if u.ID == atts[i].ID {
				atts[i] = *u
			}
		}
	}
	return atts, nil
}

// forgetAttempts drops what PrefetchAttempts read of the tasks whose attempts a
// flush writes.
func (w *WriteBehind) forgetAttempts(h HeldWrites) {
	for _, a := range slices.Concat(h.Attempts, h.AttemptUpdates) {
		delete(w.taskAtts, a.TaskID)
	}
}
