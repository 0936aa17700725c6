package store

import (
	"database/sql"

	"gorm.io/gorm"
)

// Records exposes the record types to the schema test.
func Records() []any { return records }

// Gorm exposes the gorm handle to tests.
func (d *DB) Gorm() *gorm.DB { return d.gdb }

// SQL exposes the pool to tests.
func (d *DB) SQL() *sql.DB { return d.sqlDB }
