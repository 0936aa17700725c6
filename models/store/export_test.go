package store

import (
	"context"
	"database/sql"

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
