package ledger

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/startstop"
)

// Lock keeps a single active publisher across processes. serve wires a PostgreSQL
// session advisory lock (pg_try_advisory_lock on a dedicated connection, released
// by pg_advisory_unlock or by the session ending); with SQLite there is one process
// and no Lock is needed.
type Lock interface {
	// TryLock takes the lock if it is free and reports whether this process holds it.
	// Calling it while holding the lock must report true.
	TryLock(ctx context.Context) (bool, error)
	// Unlock releases the lock.
	Unlock(ctx context.Context) error
}

// Options tune a Publisher; zero values take the defaults.
type Options struct {
	Lock         Lock          // nil: this process is the only publisher
	Logger       *slog.Logger  // nil: slog.Default()
	PollInterval time.Duration // fallback wake-up when no event arrives (5s)
	MinBackoff   time.Duration // wait after a first failed attempt (500ms)
	MaxBackoff   time.Duration // cap of the doubling backoff (1m)
	Clock        models.Clock  // PostedAt (time.Now)
	// Depth is how many transactions may be in flight at once when the ledger is a
	// Pipeline (HCS): prepared and saved, sent, their receipts not yet recorded (8).
	// 1 posts one entry at a time, as PostNext does; the local ledger always does.
	Depth int
	// OnPosted is called after an entry is recorded as posted (metrics).
	OnPosted func(e models.LedgerEntry)
}

// DefaultDepth is the default of Options.Depth.
const DefaultDepth = 8

// Publisher posts pending ledger entries to one Ledger strictly in ID order and
// records their receipts in ID order: an entry is recorded posted only after every
// entry before it is recorded. To a Pipeline it keeps up to Options.Depth entries in
// flight; to any other ledger it posts one at a time. Fields it writes (through UpdateLedgerEntry,
// which must save every field of the entry):
//
//   - after Prepare, before sending: TxID, TxBytes;
//   - after a failed attempt: Attempts+1, LastError (status stays pending); when the
//     transaction can no longer reach the ledger, TxID and TxBytes are cleared too,
//     and LastError says so;
//   - on success: Sequence, RunningHash (hex), ConsensusAt, PostedAt, TxID,
//     Status=posted, LastError="";
//   - on a permanent error: Status=failed, Attempts+1, LastError.
//
// A failed entry is skipped: later entries are posted after it.
type Publisher struct {
	store  models.Store
	ledger Ledger
	opts   Options
	log    *slog.Logger

	startstop.Base // Stop is the base's
	backoff        time.Duration
}

// NewPublisher returns a publisher of store's pending entries to l.
func NewPublisher(store models.Store, l Ledger, opts Options) *Publisher {
	if opts.PollInterval <= 0 {
		opts.PollInterval = 5 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(time.Minute, opts.MinBackoff)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Depth <= 0 {
		opts.Depth = DefaultDepth
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Publisher{store: store, ledger: l, opts: opts, log: log.With("component", "ledger.publisher", "ledger", l.Name())}
}

// Start runs the publisher in the background until Stop or until ctx ends. Starting
// a running publisher does nothing. Stop (startstop.Base's) stops it and waits for it
// until its ctx ends; an entry being sent then stays pending with its prepared
// transaction, and the next publisher resolves it by transaction id.
func (p *Publisher) Start(ctx context.Context) error {
	ctx, ok, started, stopped := p.StartInit(ctx)
	if !ok {
		return nil
	}
	go func() {
		defer stopped()
		started()
		p.run(ctx)
	}()
	return nil
}

func (p *Publisher) run(ctx context.Context) {
	wake := p.store.Subscribe(ctx)
	tick := time.NewTicker(p.opts.PollInterval)
	defer tick.Stop()
	locked := p.opts.Lock == nil
	defer func() {
		if locked && p.opts.Lock != nil {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := p.opts.Lock.Unlock(uctx); err != nil {
				p.log.Warn("release publisher lock", "err", err)
			}
		}
	}()
	for ctx.Err() == nil {
		if !locked {
			ok, err := p.opts.Lock.TryLock(ctx)
			if err != nil {
				p.log.Warn("take publisher lock", "err", err)
			}
			if !ok {
				if !p.idle(ctx, wake, tick.C) {
					return
				}
				continue
			}
			locked = true
			p.log.Info("publisher lock taken")
		}
		posted, err := p.step(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !p.sleep(ctx, p.nextBackoff()) {
				return
			}
		case posted > 0:
			p.backoff = 0
		default:
			p.backoff = 0
			if !p.idle(ctx, wake, tick.C) {
				return
			}
		}
	}
}

// idle waits for an event, the fallback tick or the end of ctx; false when ctx ended.
func (p *Publisher) idle(ctx context.Context, wake <-chan int64, tick <-chan time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case _, ok := <-wake:
		if !ok {
			return ctx.Err() == nil
		}
	case <-tick:
	}
	return true
}

// sleep waits d unless ctx ends first; false when ctx ended. Wake-ups are ignored
// while backing off, so a busy database does not hammer a failing ledger.
func (p *Publisher) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (p *Publisher) nextBackoff() time.Duration {
	if p.backoff == 0 {
		p.backoff = p.opts.MinBackoff
	} else {
		p.backoff = min(2*p.backoff, p.opts.MaxBackoff)
	}
	return p.backoff
}

// PostNext posts the oldest pending entry, if any, and reports whether one was
// posted. It is the publisher's single step without a pipeline, exported for the CLI
// and tests; the caller must hold the publisher lock. An error leaves the entry
// pending (or failed, for a permanent error) with the attempt recorded.
func (p *Publisher) PostNext(ctx context.Context) (bool, error) {
	rows, err := p.store.ListLedger(ctx, models.LedgerFilter{Status: models.LedgerPending, Limit: 1})
	if err != nil {
		return false, fmt.Errorf("ledger publisher: list pending: %w", err)
	}
	if len(rows) == 0 {
		return false, nil
	}
	e := rows[0]
	if stage, err := p.prepare(ctx, &e); err != nil {
		return p.resolve(ctx, &e, stage, err)
	}
	r, err := p.ledger.Submit(ctx, &e)
	if err != nil {
		return p.resolve(ctx, &e, stageSend, err)
	}
	return true, p.recordPosted(ctx, &e, r)
}

// Stages at which posting an entry can fail.
const (
	stagePrepare = "prepare" // Prepare failed: nothing was sent
	stageSave    = "save"    // the prepared transaction could not be saved: nothing was sent
	stageSend    = "send"    // Send or Submit failed: the outcome is unknown
	stageAwait   = "await"   // Await failed: the outcome is unknown
	stageList    = "list"    // no entry: listing the pending entries failed
)

// prepare readies e when it has no transaction yet and saves the prepared
// transaction before anything is sent, so that whoever sends this entry from now on
// sends these bytes. It returns the stage that failed.
func (p *Publisher) prepare(ctx context.Context, e *models.LedgerEntry) (string, error) {
	if e.TxID != "" {
		return "", nil
	}
	// A revocation names the sequence of what it withdraws, known once that is posted.
	filled, err := FillRevokes(ctx, p.store, e)
	if err != nil {
		return stagePrepare, err
	}
	if filled {
		if err := p.store.UpdateLedgerEntry(ctx, e); err != nil {
			return stageSave, fmt.Errorf("ledger publisher: save entry %d with the sequence it revokes: %w", e.ID, err)
		}
	}
	if err := p.ledger.Prepare(ctx, e); err != nil {
		return stagePrepare, fmt.Errorf("prepare: %w", err)
	}
	if e.TxID != "" {
		if err := p.store.UpdateLedgerEntry(ctx, e); err != nil {
			return stageSave, fmt.Errorf("ledger publisher: save prepared entry %d: %w", e.ID, err)
		}
	}
	return "", nil
}

// resolve settles an entry whose posting failed at stage with cause, following the
// package protocol: a failed Prepare is an attempt; an unknown outcome is asked of
// Lookup by the same transaction id — found: recorded posted (true); gone for good: a
// new transaction will be prepared; undecided: the attempt is recorded and the entry
// retried later.
func (p *Publisher) resolve(ctx context.Context, e *models.LedgerEntry, stage string, cause error) (bool, error) {
	switch {
	case stage == stageSave || stage == stageList:
		return false, cause
	case stage == stagePrepare:
		return false, p.attemptFailed(ctx, e, cause)
	case ctx.Err() != nil:
		// Shutting down: record nothing; the next publisher asks by transaction id.
		return false, ctx.Err()
	case IsPermanent(cause):
		return false, p.attemptFailed(ctx, e, cause)
	}
	r, found, lerr := p.ledger.Lookup(ctx, e)
	switch {
	case lerr != nil:
		if IsPermanent(lerr) {
			return false, p.attemptFailed(ctx, e, lerr)
		}
		return false, p.attemptFailed(ctx, e, cause)
	case !found:
		if e.TxID != "" {
			cause = fmt.Errorf("%v; transaction %s can no longer reach the ledger, a new one will be prepared", cause, e.TxID)
			p.log.Warn("re-preparing ledger entry", "entry", e.ID, "tx", e.TxID)
			e.TxID, e.TxBytes = "", nil
		}
		return false, p.attemptFailed(ctx, e, cause)
	}
	return true, p.recordPosted(ctx, e, r)
}

// attemptFailed records a failed attempt and returns cause.
func (p *Publisher) attemptFailed(ctx context.Context, e *models.LedgerEntry, cause error) error {
	e.Attempts++
	e.LastError = contract.Truncate(cause.Error(), 1000)
	if IsPermanent(cause) {
		e.Status = models.LedgerFailed
		p.log.Error("ledger entry failed permanently", "entry", e.ID, "err", cause)
	} else {
		p.log.Warn("ledger entry attempt failed", "entry", e.ID, "attempt", e.Attempts, "err", cause)
	}
	if err := p.store.UpdateLedgerEntry(ctx, e); err != nil {
		return errors.Join(cause, fmt.Errorf("ledger publisher: record attempt of entry %d: %w", e.ID, err))
	}
	return cause
}

func (p *Publisher) recordPosted(ctx context.Context, e *models.LedgerEntry, r Receipt) error {
	now := p.opts.Clock().UTC()
	at := ChainTime(r.ConsensusAt)
	e.Status = models.LedgerPosted
	e.Sequence = r.Sequence
	e.RunningHash = hex.EncodeToString(r.RunningHash)
	e.ConsensusAt = &at
	e.PostedAt = &now
	e.LastError = ""
	if r.TxID != "" {
		e.TxID = r.TxID
	}
	if err := p.store.UpdateLedgerEntry(ctx, e); err != nil {
		return fmt.Errorf("ledger publisher: record receipt of entry %d: %w", e.ID, err)
	}
	p.log.Debug("ledger entry posted", "entry", e.ID, "sequence", e.Sequence)
	if p.opts.OnPosted != nil {
		p.opts.OnPosted(*e)
	}
	return nil
}

// Drain posts pending entries until none is left or an attempt fails (CLI, tests).
func (p *Publisher) Drain(ctx context.Context) (int, error) {
	n := 0
	for {
		posted, err := p.step(ctx)
		n += posted
		if err != nil || posted == 0 {
			return n, err
		}
	}
}

// step posts what is pending, pipelined when the ledger allows it, and returns how
// many entries it recorded posted.
func (p *Publisher) step(ctx context.Context) (int, error) {
	if pl, ok := p.ledger.(Pipeline); ok && p.opts.Depth > 1 {
		return p.postPipelined(ctx, pl)
	}
	posted, err := p.PostNext(ctx)
	if posted {
		return 1, err
	}
	return 0, err
}
