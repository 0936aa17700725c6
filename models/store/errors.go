package store

import (
	"errors"
	"fmt"
	"strings"

	gosqlite "github.com/glebarez/go-sqlite"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/countersign/countersign/models"
)

// SQLite's primary result code for constraint violations.
const sqliteConstraint = 19

// constraintKind classifies a driver error: "unique", "foreign_key", "check", "retry"
// (PostgreSQL aborted the transaction for a deadlock or a serialisation failure) or "".
func constraintKind(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "23505":
			return "unique"
		case "23503":
			return "foreign_key"
		case "23514":
			return "check"
		case "40P01", "40001":
			return "retry"
		}
		return ""
	}
	var se *gosqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqliteConstraint {
		msg := se.Error()
		switch {
		case strings.Contains(msg, "UNIQUE constraint failed"), strings.Contains(msg, "PRIMARY KEY"):
			return "unique"
		case strings.Contains(msg, "FOREIGN KEY constraint failed"):
			return "foreign_key"
		case strings.Contains(msg, "CHECK constraint failed"):
			return "check"
		}
	}
	return ""
}

// mapError turns a driver error from writing a kind of row into a domain error where
// the caller can act on it: a reference to a missing row is EINVALID, a violated check
// is EINVALID, a deadlock or serialisation failure is ECONFLICT; other errors are wrapped as internal. Unique violations are mapped by
// the callers, which know what was duplicated.
func mapError(err error, kind string) error {
	if err == nil {
		return nil
	}
	var me *models.Error
	if errors.As(err, &me) {
		return err
	}
	switch constraintKind(err) {
	case "unique":
		return models.Errorf(models.ECONFLICT, "%s already exists", kind)
	case "foreign_key":
		return models.Errorf(models.EINVALID, "%s refers to something that does not exist", kind)
	case "check":
		return models.Errorf(models.EINVALID, "%s breaks a rule of the schema", kind)
	case "retry":
		return models.Errorf(models.ECONFLICT, "%s collided with a concurrent change; try again", kind)
	}
	return fmt.Errorf("store: %s: %w", kind, err)
}

// conflictOr returns an ECONFLICT error with msg for a unique violation, else
// mapError's answer.
func conflictOr(err error, kind, format string, args ...any) error {
	if err != nil && constraintKind(err) == "unique" {
		return models.Errorf(models.ECONFLICT, format, args...)
	}
	return mapError(err, kind)
}

// readError maps a read's error: gorm's not-found becomes ENOTFOUND for kind and key.
func readError(err error, kind string, key any) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return models.NotFound(kind, key)
	}
	return mapError(err, kind)
}

// isNotFound reports whether err is gorm's record-not-found.
func isNotFound(err error) bool { return errors.Is(err, gorm.ErrRecordNotFound) }
