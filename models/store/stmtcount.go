package store

import (
	"context"
	"database/sql"
	"sync/atomic"

	"gorm.io/gorm"
)

// StatementCounter counts the statements (round trips: queries, executions, BEGIN and
// COMMIT or ROLLBACK) the DB sends once CountStatements installed it. It exists for tests
// and benchmarks that hold a hot path to a number of round trips (issue #34's claim).
type StatementCounter struct{ n atomic.Int64 }

// N is the number of statements counted so far.
func (c *StatementCounter) N() int64 { return c.n.Load() }

// CountStatements makes d count every statement it sends from now on, inside
// transactions or not, gorm's and the fixed SQL sent through the connection alike. Call
// it before d is in use by other goroutines: it swaps the connection pool under gorm.
func (d *DB) CountStatements() *StatementCounter {
	c := &StatementCounter{}
	d.gdb.Statement.ConnPool = &countPool{pool: d.gdb.Statement.ConnPool, n: &c.n}
	return c
}

// countPool is a gorm.ConnPool that counts what goes through it.
type countPool struct {
	pool gorm.ConnPool
	n    *atomic.Int64
}

func (p *countPool) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return p.pool.PrepareContext(ctx, q)
}

func (p *countPool) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	p.n.Add(1)
	return p.pool.ExecContext(ctx, q, args...)
}

func (p *countPool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	p.n.Add(1)
	return p.pool.QueryContext(ctx, q, args...)
}

func (p *countPool) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	p.n.Add(1)
	return p.pool.QueryRowContext(ctx, q, args...)
}

// BeginTx begins a transaction whose statements are counted too (gorm.ConnPoolBeginner).
func (p *countPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	db, ok := p.pool.(*sql.DB)
	if !ok {
		return nil, sql.ErrConnDone
	}
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	p.n.Add(1)
	return &countTx{countPool: countPool{pool: tx, n: p.n}, tx: tx}, nil
}

// GetDBConn returns the database underneath (gorm.GetDBConnector).
func (p *countPool) GetDBConn() (*sql.DB, error) {
	if db, ok := p.pool.(*sql.DB); ok {
		return db, nil
	}
	return nil, sql.ErrConnDone
}

// countTx is a counted transaction (gorm.TxCommitter).
type countTx struct {
	countPool
	tx *sql.Tx
}

func (t *countTx) Commit() error   { t.n.Add(1); return t.tx.Commit() }
func (t *countTx) Rollback() error { t.n.Add(1); return t.tx.Rollback() }
