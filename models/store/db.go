// Package store is the gorm implementation of models.Store for PostgreSQL and SQLite.
//
// The schema comes from the embedded SQL files of package migrations (Migrate applies
// them); nothing here calls AutoMigrate. Rows are read and written through private
// record types (agentRecord, taskRecord, …) that never leave the package: every
// method takes and returns models types.
//
// Conventions every method follows:
//   - Times are stored in UTC with microsecond precision (PostgreSQL's), and the
//     struct passed to a Create* or Update* method is refreshed with what was stored,
//     so it equals what a later Get* returns.
//   - The store sets CreatedAt when it is zero and UpdatedAt on every write.
//   - Get* and Lock* return an ENOTFOUND *models.Error for a missing row, a unique
//     violation is an ECONFLICT, a reference to a missing row an EINVALID.
//   - List fields whose JSON has no omitempty (Agent.Roles, Attempt.Checks,
//     Template.Steps) come back non-nil; the other lists and maps come back nil when
//     empty.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/countersign/countersign/models"
)

// The dialects Dialect returns.
const (
	DialectPostgres = "postgres"
	DialectSQLite   = "sqlite"
)

// Config says which database to open.
type Config struct {
	// DatabaseURL selects PostgreSQL when it starts with postgres:// or
	// postgresql://. Empty means SQLite at SQLitePath; any other value is an error.
	DatabaseURL string
	// SQLitePath is the SQLite database file (created with its directory when
	// missing), or ":memory:" for a private in-memory database.
	SQLitePath string
}

// DB is a models.Store on PostgreSQL or SQLite. It is safe for concurrent use.
//
// On SQLite the pool holds one connection, so writers are serialised and a
// transaction holds the whole database: inside InTx's fn use only the Tx it is given,
// never the DB itself (that would wait for the connection fn holds).
type DB struct {
	ops

	gdb     *gorm.DB
	sqlDB   *sql.DB
	dialect string
	url     string // PostgreSQL URL for the LISTEN connection

	hub   *hub
	work  workSignals // work-ready wake-ups (workready.go)
	turns workSignals // claim turns let go (workready.go)
	// horizonKick wakes followHorizon (PostgreSQL); it holds one pending kick.
	horizonKick chan struct{}
	listenOnce  sync.Once
	stop        context.CancelFunc // stops background work (the listener)
	background  context.Context
	wg          sync.WaitGroup
	closeOnce   sync.Once
	closeErr    error
}

var _ models.Store = (*DB)(nil)

// ops implements models.Tx on a gorm handle: the DB's pool outside a transaction, the
// transaction inside InTx.
type ops struct {
	g  *gorm.DB
	db *DB
	tx *txState // nil outside a transaction
}

// txState is what a transaction remembers until it commits.
type txState struct {
	maxEvent int64 // the largest event id appended; subscribers hear of it after commit
	agents   agentMemo
	appends  // events and ledger entries, written just before the commit (appends.go)
	// noDependents are tasks LockTask found no task depending on (see LockTask).
	noDependents map[int64]bool
}

// Open connects to the database cfg names. It does not migrate: call Migrate (the
// command line migrates whenever it opens the database) before using the store.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	d := &DB{hub: newHub(), horizonKick: make(chan struct{}, 1)}
	d.work.hub, d.turns.hub = newHub(), newHub()
	var dialector gorm.Dialector
	switch u := cfg.DatabaseURL; {
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		d.dialect, d.url = DialectPostgres, u
		dialector = postgres.New(postgres.Config{DSN: u})
	case u == "":
		dsn, err := sqliteDSN(cfg.SQLitePath)
		if err != nil {
			return nil, err
		}
		d.dialect = DialectSQLite
		dialector = sqlite.Open(dsn)
	default:
		// The URL may hold a password: never echo it.
		return nil, errors.New("store: unsupported database URL: want postgres://… or postgresql://…, or none for SQLite")
	}
	gdb, err := gorm.Open(dialector, &gorm.Config{
		Logger:                 logger.Discard,
		NowFunc:                now,
		SkipDefaultTransaction: true, // the store opens transactions where a write needs one
		DisableAutomaticPing:   true, // pinged below, with ctx
	})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", d.dialect, err)
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if d.dialect == DialectSQLite {
		// One connection: SQLite has one writer anyway, and this makes every
		// transaction exclusive within the process (what Lock* rely on) and keeps an
		// in-memory database alive.
		sqlDB.SetMaxOpenConns(1)
		sqlDB.SetMaxIdleConns(1)
		sqlDB.SetConnMaxLifetime(0)
		sqlDB.SetConnMaxIdleTime(0)
	} else {
		sqlDB.SetMaxOpenConns(20)
		sqlDB.SetMaxIdleConns(20)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", d.dialect, err)
	}
	d.gdb, d.sqlDB = gdb, sqlDB
	d.ops = ops{g: gdb, db: d}
	d.background, d.stop = context.WithCancel(context.Background())
	return d, nil
}

// sqliteDSN builds the driver DSN: foreign keys on, a busy timeout for other
// processes (the CLI) holding the file, immediate transactions so a transaction that
// reads before it writes cannot fail to upgrade its lock, and WAL for files.
func sqliteDSN(path string) (string, error) {
	if path == "" {
		return "", errors.New("store: no database configured: set DatabaseURL or SQLitePath")
	}
	if strings.ContainsAny(path, "?#") {
		return "", errors.New("store: SQLite path must not contain '?' or '#'")
	}
	params := "_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)&_txlock=immediate"
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return "", fmt.Errorf("store: create database directory: %w", err)
		}
		params += "&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	}
	return path + "?" + params, nil
}

// Dialect returns "postgres" or "sqlite".
func (d *DB) Dialect() string { return d.dialect }

// Close stops the event listener, closes every subscriber channel and the pool. It is
// idempotent.
func (d *DB) Close() error {
	d.closeOnce.Do(func() {
		d.stop()
		d.wg.Wait()
		d.hub.close()
		d.work.hub.close()
		d.turns.hub.close()
		d.closeErr = d.sqlDB.Close()
	})
	return d.closeErr
}

// InTx runs fn in one transaction. An error returned by fn rolls it back and is
// returned as is; a panic in fn rolls it back and panics again. Subscribers hear of the
// events fn appended only once the transaction has committed. On PostgreSQL it returns
// once readers can see them (see committed), at most a few seconds after the commit.
func (d *DB) InTx(ctx context.Context, fn func(tx models.Tx) error) (err error) {
	gtx := d.gdb.WithContext(ctx).Begin()
	if gtx.Error != nil {
		return fmt.Errorf("store: begin: %w", gtx.Error)
	}
	t := &ops{g: gtx, db: d, tx: &txState{}}
	committed := false
	defer func() {
		if committed {
			return
		}
		// Roll back with a context of its own: ctx may be what was cancelled.
		gtx.WithContext(context.WithoutCancel(ctx)).Rollback()
		if p := recover(); p != nil {
			panic(p)
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	// Read before flushAppends, which clears the appends.
	wakeLocal, err := t.signalWork(ctx)
	if err != nil {
		return err
	}
	if err := t.flushAppends(ctx); err != nil {
		return err
	}
	if err := gtx.Commit().Error; err != nil {
		return fmt.Errorf("store: commit: %w", mapError(err, "transaction"))
	}
	committed = true
	if t.tx.maxEvent > 0 {
		d.committed(ctx, t.tx.maxEvent)
	}
	if wakeLocal {
		d.work.publish()
	}
	return nil
}

// atomic runs fn in the current transaction, or in a new one outside a transaction, for
// the writes that take several statements.
func (o *ops) atomic(ctx context.Context, fn func(o *ops) error) error {
	if o.tx != nil {
		return fn(o)
	}
	return o.db.InTx(ctx, func(tx models.Tx) error { return fn(tx.(*ops)) })
}

// q is the gorm handle for one call.
func (o *ops) q(ctx context.Context) *gorm.DB { return o.g.WithContext(ctx) }

// now is the store's clock: UTC at the precision both databases keep.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// normTime puts t in the form now returns.
func normTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// normTimePtr is normTime for optional times.
func normTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	n := normTime(*t)
	return &n
}

// listLimit applies the default (100) and the maximum (1000) page size.
func listLimit(n int) int {
	switch {
	case n <= 0:
		return 100
	case n > 1000:
		return 1000
	}
	return n
}
