// Package storetest opens fresh, migrated stores for tests anywhere in the project:
// SQLite in the test's temp dir, and PostgreSQL in a new database created for the test
// on the server COUNTERSIGN_TEST_POSTGRES names and dropped when the test ends.
//
// When PostgreSQL cannot be reached the test is skipped with the reason, or fails when
// CI=true, so that CI never passes without having run against PostgreSQL.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/models/store"
)

// DefaultPostgres is the server used when COUNTERSIGN_TEST_POSTGRES is not set.
const DefaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Dialects returns the dialects every store test should run on.
func Dialects() []string { return []string{store.DialectSQLite, store.DialectPostgres} }

// Open returns a fresh, migrated store of dialect ("sqlite" or "postgres"), closed
// (and on PostgreSQL its database dropped) when the test ends.
func Open(t testing.TB, dialect string) *store.DB {
	t.Helper()
	cfg := Config(t, dialect)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := store.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("storetest: open %s: %v", dialect, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Empty returns the configuration of a fresh database of dialect with no schema at
// all, removed when the test ends.
func Empty(t testing.TB, dialect string) store.Config {
	t.Helper()
	var cfg store.Config
	switch dialect {
	case store.DialectSQLite:
		cfg.SQLitePath = filepath.Join(t.TempDir(), "countersign.db")
	case store.DialectPostgres:
		cfg.DatabaseURL = createDatabase(t)
	default:
		t.Fatalf("storetest: unknown dialect %q", dialect)
	}
	return cfg
}

// Config returns the configuration of a fresh, migrated database of dialect, for a
// test that opens it itself (or lets another process open it). It is removed when the
// test ends.
func Config(t testing.TB, dialect string) store.Config {
	t.Helper()
	cfg := Empty(t, dialect)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := store.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("storetest: open %s: %v", dialect, err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("storetest: migrate %s: %v", dialect, err)
	}
	return cfg
}

// URL returns the URL of a fresh, migrated PostgreSQL database, dropped when the test
// ends; it skips (or fails with CI=true) when PostgreSQL is unreachable.
func URL(t testing.TB) string {
	t.Helper()
	return Config(t, store.DialectPostgres).DatabaseURL
}

// ServerURL is the PostgreSQL server tests use: COUNTERSIGN_TEST_POSTGRES or
// DefaultPostgres.
func ServerURL() string {
	if u := os.Getenv("COUNTERSIGN_TEST_POSTGRES"); u != "" {
		return u
	}
	return DefaultPostgres
}

// createDatabase creates cs_test_<random> on the test server and drops it (forcing
// out leftover connections) when the test ends.
func createDatabase(t testing.TB) string {
	t.Helper()
	server := ServerURL()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		unavailable(t, "PostgreSQL is not reachable at %s (set COUNTERSIGN_TEST_POSTGRES): %v", redact(server), err)
	}
	defer admin.Close(context.Background())

	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	name := "cs_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		unavailable(t, "cannot create a test database on %s: %v", redact(server), err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("storetest: drop %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("storetest: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("storetest: COUNTERSIGN_TEST_POSTGRES is not a URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// unavailable fails the test under CI=true and skips it otherwise.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("storetest: "+format, args...)
	}
	t.Skipf("storetest: skipping: "+format+" (with CI=true this fails)", args...)
}

// redact hides a password in a database URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
