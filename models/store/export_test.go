package store

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/countersign/countersign/models"
	"strings"

	"gorm.io/gorm"
)

// Records exposes the record types to the schema test.
func Records() []any { return records }

// Gorm exposes the gorm handle to tests.
func (d *DB) Gorm() *gorm.DB { return d.gdb }

// SQL exposes the pool to tests.
func (d *DB) SQL() *sql.DB { return d.sqlDB }

// MigrateTo applies the embedded migrations up to and including version.
func (d *DB) MigrateTo(ctx context.Context, version int64) error {
	ms, err := Migrations(d.dialect)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Version > version {
			break
		}
		if err := d.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// ReadyPlan returns the query plan of the statement ReadyTasks runs for rq, as the
// database explains it (EXPLAIN on PostgreSQL, EXPLAIN QUERY PLAN on SQLite).
func (d *DB) ReadyPlan(ctx context.Context, rq models.ReadyQuery) (string, error) {
	return d.plan(ctx, d.readyQuery(ctx, rq).Session(&gorm.Session{DryRun: true}).Find(&[]taskRecord{}).Statement)
}

// GoalProgressPlans returns the query plans of GoalProgressFacts' per-day counts of
// goal id: tasks created, tasks verified.
func (d *DB) GoalProgressPlans(ctx context.Context, id int64) (created, verified string, err error) {
	dry := func(q *gorm.DB) *gorm.Statement {
		return q.Session(&gorm.Session{DryRun: true}).Scan(&[]dayCountRow{}).Statement
	}
	if created, err = d.plan(ctx, dry(d.goalCreatedQuery(ctx, id))); err != nil {
		return "", "", err
	}
	verified, err = d.plan(ctx, dry(d.goalVerifiedQuery(ctx, id)))
	return created, verified, err
}

// plan explains stmt.
func (d *DB) plan(ctx context.Context, stmt *gorm.Statement) (string, error) {
	explain := "EXPLAIN "
	if d.dialect == DialectSQLite {
		explain = "EXPLAIN QUERY PLAN "
	}
	rows, err := d.sqlDB.QueryContext(ctx, explain+stmt.SQL.String(), stmt.Vars...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var plan strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		detail := vals[len(vals)-1] // SQLite's last column is the step's description
		if b, ok := detail.([]byte); ok {
			detail = string(b)
		}
		fmt.Fprintln(&plan, detail)
	}
	return plan.String(), rows.Err()
}

// GormTx exposes the gorm handle of a transaction (a Tx from InTx) to tests.
func (o *ops) GormTx() *gorm.DB { return o.g }
