package store

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/migrations"
)

// Migration is one embedded SQL file of the store's dialect.
type Migration struct {
	Version int64  // from the file name's numeric prefix
	Name    string // the file name, e.g. 0001_init.sql
	SQL     string
}

// Migrations lists the embedded migrations of dialect ("postgres" or "sqlite") in
// version order.
func Migrations(dialect string) ([]Migration, error) {
	entries, err := fs.ReadDir(migrations.FS, dialect)
	if err != nil {
		return nil, fmt.Errorf("store: no migrations for dialect %q: %w", dialect, err)
	}
	var out []Migration
	seen := map[int64]string{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".sql") {
			continue
		}
		prefix, _, _ := strings.Cut(name, "_")
		v, err := strconv.ParseInt(prefix, 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %s/%s: name must start with a positive version number", dialect, name)
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("store: migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		b, err := fs.ReadFile(migrations.FS, path.Join(dialect, name))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Migrate applies every embedded migration that is not applied yet, in version order,
// each in its own transaction together with its row in schema_migrations. Running it
// again (or from several processes at once on PostgreSQL, which serialise on an
// advisory lock) applies nothing twice.
func (d *DB) Migrate(ctx context.Context) error {
	ms, err := Migrations(d.dialect)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := d.apply(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// migrationLockKey is the advisory lock key migrations take on PostgreSQL.
const migrationLockKey = 0x636f756e7465 // "counte"

// apply runs one migration unless it is applied already.
func (d *DB) apply(ctx context.Context, m Migration) (err error) {
	tx, err := d.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: migration %s: begin: %w", m.Name, err)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	if d.dialect == DialectPostgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLockKey)); err != nil {
			return fmt.Errorf("store: migration lock: %w", err)
		}
	}
	applied, err := appliedVersions(ctx, tx, d.dialect)
	if err != nil {
		return err
	}
	if applied[m.Version] {
		return tx.Rollback()
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("store: migration %s: %w", m.Name, err)
	}
	insert := "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"
	if d.dialect == DialectPostgres {
		insert = "INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)"
	}
	if _, err := tx.ExecContext(ctx, insert, m.Version, now()); err != nil {
		return fmt.Errorf("store: migration %s: record: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: migration %s: commit: %w", m.Name, err)
	}
	return nil
}

// querier is what appliedVersions needs of a *sql.DB or *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// appliedVersions reads schema_migrations; none are applied while it does not exist.
func appliedVersions(ctx context.Context, q querier, dialect string) (map[int64]bool, error) {
	exists := "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
	if dialect == DialectPostgres {
		exists = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'schema_migrations'"
	}
	var n int
	if err := q.QueryRowContext(ctx, exists).Scan(&n); err != nil {
		return nil, fmt.Errorf("store: read schema_migrations: %w", err)
	}
	applied := map[int64]bool{}
	if n == 0 {
		return applied, nil
	}
	rows, err := q.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("store: read schema_migrations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
	return applied, rows.Err()
}

// Ping checks that the database answers and that every embedded migration is applied;
// the error names the first missing one.
func (d *DB) Ping(ctx context.Context) error {
	if err := d.sqlDB.PingContext(ctx); err != nil {
		return fmt.Errorf("store: database unreachable: %w", err)
	}
	ms, err := Migrations(d.dialect)
	if err != nil {
		return err
	}
	applied, err := appliedVersions(ctx, d.sqlDB, d.dialect)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if !applied[m.Version] {
			return fmt.Errorf("store: migration %04d (%s) is not applied: run countersign migrate", m.Version, m.Name)
		}
	}
	return nil
}

// migrationRecord is a row of schema_migrations. Migrate writes it with database/sql;
// the type exists so the schema test covers the table.
type migrationRecord struct {
	Version   int64 `gorm:"primaryKey;autoIncrement:false"`
	AppliedAt time.Time
}

func (migrationRecord) TableName() string { return "schema_migrations" }
