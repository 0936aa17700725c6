package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner/ledger"
)

func runLedgerVerify(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := newFlags("ledger verify", "ledger verify [flags]", out)
	storeFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	entries, err := ledger.ReadAll(ctx, db)
	if err != nil {
		return err
	}
	if err := ledger.VerifyChain(entries); err != nil {
		return fmt.Errorf("ledger chain broken: %w", err)
	}
	seq, hash := ledger.ChainTip(entries)
	posted := 0
	for _, e := range entries {
		if e.Status == models.LedgerPosted {
			posted++
		}
	}
	fmt.Fprintf(out, "ledger chain intact: %d entries, %d posted; tip sequence %d running hash %s\n", len(entries), posted, seq, hash)
	fmt.Fprintln(out, "keep the tip elsewhere: entries removed from the end can only be seen against it")
	return nil
}

func runHCSCreateTopic(ctx context.Context, args []string, out io.Writer) error {
	var memo string
	fs := newFlags("hcs create-topic", "hcs create-topic [--memo TEXT]  (reads HEDERA_NETWORK, HEDERA_OPERATOR_ID, HEDERA_OPERATOR_KEY, optional HEDERA_SUBMIT_KEY)", out)
	fs.StringVar(&memo, "memo", "countersign ledger", "topic memo")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := ledger.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	submit := cfg.SubmitKey
	if !submit.IsSet() {
		submit = cfg.OperatorKey
	}
	h, err := ledger.NewHCS(cfg)
	if err != nil {
		return err
	}
	defer h.Close()
	topic, err := h.CreateTopic(ctx, memo, submit)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, topic)
	return nil
}

// openLedger builds the configured ledger and what the pages and API show of it.
func openLedger(c *config, db *store.DB) (ledger.Ledger, ledger.Info, error) {
	if c.Ledger != "hcs" {
		return ledger.NewLocal(db), ledger.Info{Kind: "local"}, nil
	}
	cfg, err := ledger.ConfigFromEnv(os.Getenv)
	if err != nil {
		return nil, ledger.Info{}, err
	}
	if err := cfg.RequireTopic(); err != nil {
		return nil, ledger.Info{}, err
	}
	h, err := ledger.NewHCS(cfg)
	if err != nil {
		return nil, ledger.Info{}, err
	}
	return h, ledger.Info{Kind: "hcs", Network: cfg.Network, TopicID: cfg.TopicID}, nil
}

// startPublisher starts the ledger publisher. On PostgreSQL only one process across
// the cluster publishes, held by an advisory lock on a connection of its own.
func startPublisher(ctx context.Context, c *config, db *store.DB, l ledger.Ledger, log *slog.Logger) (func(context.Context) error, error) {
	opts := ledger.Options{Logger: log}
	var lock *pgLock
	if db.Dialect() == "postgres" {
		lock = newPGLock(c.DatabaseURL, publisherLockKey)
		opts.Lock = lock
	}
	p := ledger.NewPublisher(db, l, opts)
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		err := p.Stop(ctx)
		if lock != nil {
			err = errors.Join(err, lock.Close(ctx))
		}
		return err
	}, nil
}
