package runner

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/models"
)

// settleWindow is how long the settle that is to run a batch waits for others to
// join it: attempts that finish together (a parallel batch, a burst of short tasks)
// then share one transaction instead of queueing for one each. Short beside any
// attempt, and paid once per batch.
const settleWindow = 2 * time.Millisecond

// maxSettleBatch bounds the settles in one transaction, so that a batch's locks are
// held briefly.
const maxSettleBatch = 32

// settleReq is one attempt's outcome waiting to be recorded, and what recording it
// decided (d) or why it could not be (err).
type settleReq struct {
	ctx   context.Context
	tr    *taskRun
	ar    *attemptRun
	d     decision
	err   error
	saved settleState
}

// settleState is what settleTx changes on the task's and the attempt's in-memory
// state: put back when the transaction that changed it rolled back, so that the
// settle can run again as if it had not run.
type settleState struct {
	task       models.Task
	reviewNext bool
	row        *models.Attempt
	rowVal     models.Attempt
	outcome    string
	stage      string
	diagnosis  string
	question   string
	cause      error
}

func (s *settleReq) save() {
	s.saved = settleState{task: s.tr.task, reviewNext: s.tr.reviewNext, row: s.ar.row,
		outcome: s.ar.outcome, stage: s.ar.stage, diagnosis: s.ar.diagnosis, question: s.ar.question, cause: s.ar.cause}
	if s.ar.row != nil {
		s.saved.rowVal = *s.ar.row
	}
}

func (s *settleReq) restore() {
	v := s.saved
	s.tr.task, s.tr.reviewNext, s.ar.row = v.task, v.reviewNext, v.row
	if v.row != nil {
		*v.row = v.rowVal
	}
	s.ar.outcome, s.ar.stage, s.ar.diagnosis, s.ar.question, s.ar.cause = v.outcome, v.stage, v.diagnosis, v.question, v.cause
}

// settleBatches records the outcomes of attempts that finish together in one
// transaction (groupCommit, as the attempt tokens' revocations): each settle's
// changes, events and ledger entries in the order the settles joined the batch, each
// task's decision handed back to its own goroutine. When the shared transaction
// fails (one task's settle failed, a deadlock), nothing of it was recorded and each
// settle runs again in its own transaction: one task's failure is that task's alone.
type settleBatches struct {
	g      groupCommit[*settleReq]
	txs    atomic.Int64 // settle transactions begun (tests, benchmarks)
	splits atomic.Int64 // batches whose shared transaction failed, settled one by one
	// fault, in tests, fails a task's settle inside its transaction.
	fault func(tr *taskRun) error
}

// record settles s with whatever other settles join it, and returns once s's own
// outcome is known (s.d, s.err).
func (p *settler) record(s *settleReq) {
	_ = p.batches.g.submit(s) // each request carries its own result
}

// newSettler returns a settler whose settles are batched (settleBatch).
func newSettler(c *common, rv *reviewing) *settler {
	p := &settler{common: c, reviews: rv}
	p.batches.g = groupCommit[*settleReq]{do: p.settleBatch, window: settleWindow, max: maxSettleBatch}
	return p
}

// settleBatch runs one batch: together when there are several, else (or after the
// shared transaction failed) each on its own.
func (p *settler) settleBatch(batch []*settleReq) error {
	if len(batch) > 1 {
		for _, s := range batch {
			s.save()
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), settleTimeout)
		err := p.settleIn(ctx, batch)
		cancel()
		if err == nil {
			return nil
		}
		p.batches.splits.Add(1)
		p.log.Warn("settling attempts together failed; settling each on its own", "attempts", len(batch), "err", err)
		for _, s := range batch {
			s.restore()
		}
	}
	for _, s := range batch {
		s.err = p.settleIn(s.ctx, []*settleReq{s})
	}
	return nil
}

// settleIn records the settles of batch in one transaction through a
// models.WriteBehind: the batch's tasks locked with one statement and their attempts
// read with one, the attempt rows' and the task rows' updates written with one
// statement each, and the events with
// one, whatever the number of settles (a write the WriteBehind does not hold, such as
// a goal's, flushes what it held first, so every write keeps its order).
func (p *settler) settleIn(ctx context.Context, batch []*settleReq) error {
	p.batches.txs.Add(1)
	return p.inTx(ctx, func(tx models.Tx) error {
		bw, _ := unwrapTx(tx).(models.BatchWriter)
		buf := models.NewWriteBehind(tx, bw)
		locker, _ := unwrapTx(tx).(models.TasksLocker)
		ids := make([]int64, len(batch))
		for i, s := range batch {
			ids[i] = s.tr.task.ID
		}
		if err := buf.PrefetchLocks(ctx, locker, ids); err != nil {
			return err
		}
		reader, _ := unwrapTx(tx).(models.AttemptsReader)
		if err := buf.PrefetchAttempts(ctx, reader, ids); err != nil {
			return err
		}
		for _, s := range batch {
			var err error
			if s.d, err = p.settleTx(ctx, buf, s.tr, s.ar); err != nil {
				return fmt.Errorf("task %d: %w", s.tr.task.ID, err)
			}
			if f := p.batches.fault; f != nil {
				if err := f(s.tr); err != nil {
					return fmt.Errorf("task %d: %w", s.tr.task.ID, err)
				}
			}
		}
		return buf.Flush(ctx)
	})
}
