// Package migrations holds the versioned SQL schema of Countersign, one directory per
// dialect (postgres/, sqlite/), embedded into the binary.
//
// Each file is named NNNN_description.sql; NNNN is its version. The store
// (models/store) applies the files of its dialect in version order, each in its own
// transaction, and records the version in schema_migrations, so applying them is
// idempotent. The schema is only ever changed by adding a new file; nothing calls
// gorm's AutoMigrate.
//
// Storage choices the files make:
//   - Lists that are only read and written whole (agent roles, a task's contract,
//     template steps, run params, attempt checks and criteria, project rules) are JSON
//     text columns. Agent roles are JSON text because nothing queries agents by role in
//     SQL: the runner reads the (small) agent list and filters it in Go.
//   - Task dependencies are a join table, task_deps(task_id, depends_on_id), because
//     the runner asks for a task's dependents.
//   - Ledger message, payload and signed transaction bytes are bytea (PostgreSQL) or
//     blob (SQLite): they are posted byte for byte.
//   - Times are timestamptz on PostgreSQL and DATETIME (UTC text) on SQLite.
//   - The init migration creates the built-in system agent "runner".
package migrations

import "embed"

// FS holds postgres/NNNN_*.sql and sqlite/NNNN_*.sql.
//
//go:embed postgres/*.sql sqlite/*.sql
var FS embed.FS
