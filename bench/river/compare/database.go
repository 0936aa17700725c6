package compare

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultServer is the PostgreSQL server the comparison uses unless told otherwise.
const DefaultServer = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Reachable connects to the server at serverURL and returns the error when it cannot.
func Reachable(ctx context.Context, serverURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// withDatabase creates the database cs_bench_<random> on the server at serverURL,
// calls fn with its URL, and drops it (forcing out leftover connections) whatever fn
// returns, even when ctx is done or fn panics.
func withDatabase(ctx context.Context, serverURL string, fn func(dbURL string) error) (err error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return fmt.Errorf("postgres URL: %w", err)
	}
	name := "cs_bench_" + randomID()
	if err := adminExec(ctx, serverURL, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	defer func() {
		// Not ctx: the database is dropped even after an interrupt.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if derr := adminExec(dctx, serverURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); derr != nil && err == nil {
			err = fmt.Errorf("drop database %s: %w", name, derr)
		}
	}()
	u.Path = "/" + name
	return fn(u.String())
}

// adminExec runs one statement on a connection of its own to the server.
func adminExec(ctx context.Context, serverURL, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// settle brings the PostgreSQL database at dbURL to the state autovacuum leaves it in
// soon after a bulk insert (VACUUM ANALYZE: visibility map and planner statistics),
// so that the clock, started right after the insert, measures the system rather than
// plans made on statistics of an empty table and autovacuum catching up meanwhile. An
// empty dbURL (SQLite, which keeps no statistics unless told to) is left as it is.
func settle(ctx context.Context, dbURL string) error {
	if dbURL == "" {
		return nil
	}
	if err := adminExec(ctx, dbURL, "VACUUM ANALYZE"); err != nil {
		return fmt.Errorf("vacuum analyze: %w", err)
	}
	return nil
}
