package store_test

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"

	"gorm.io/gorm/schema"

	"github.com/countersign/countersign/models/store"
)

// TestSchemaMatchesRecords checks every record type against its migrated table: a
// field without a column or a column without a field fails, and so does a table
// without a record type.
func TestSchemaMatchesRecords(t *testing.T) {
	each(t, func(t *testing.T, db *store.DB) {
		ctx := ctxT(t)
		tables := map[string]bool{}
		for _, table := range listTables(t, ctx, db) {
			tables[table] = true
		}
		for _, rec := range store.Records() {
			s, err := schema.Parse(rec, &sync.Map{}, db.Gorm().NamingStrategy)
			if err != nil {
				t.Fatalf("parse %T: %v", rec, err)
			}
			if !tables[s.Table] {
				t.Errorf("%T: table %s does not exist", rec, s.Table)
				continue
			}
			delete(tables, s.Table)
			fields := slices.Clone(s.DBNames)
			sort.Strings(fields)
			columns := listColumns(t, ctx, db, s.Table)
			for _, f := range fields {
				if !slices.Contains(columns, f) {
					t.Errorf("%T: field column %s.%s is not in the migrated table", rec, s.Table, f)
				}
			}
			for _, c := range columns {
				if !slices.Contains(fields, c) {
					t.Errorf("%T: column %s.%s has no field", rec, s.Table, c)
				}
			}
		}
		for table := range tables {
			t.Errorf("table %s has no record type", table)
		}
	})
}

func listTables(t *testing.T, ctx context.Context, db *store.DB) []string {
	t.Helper()
	var names []string
	q := "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
	if db.Dialect() == store.DialectSQLite {
		q = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
	}
	must(t, db.Gorm().WithContext(ctx).Raw(q).Scan(&names).Error)
	return names
}

func listColumns(t *testing.T, ctx context.Context, db *store.DB, table string) []string {
	t.Helper()
	var names []string
	if db.Dialect() == store.DialectSQLite {
		var cols []struct{ Name string }
		must(t, db.Gorm().WithContext(ctx).Raw("SELECT name FROM pragma_table_info(?)", table).Scan(&cols).Error)
		for _, c := range cols {
			names = append(names, c.Name)
		}
	} else {
		must(t, db.Gorm().WithContext(ctx).Raw(
			"SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?", table).
			Scan(&names).Error)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatalf("table %s has no columns", table)
	}
	return names
}

// TestMigrationsPaired checks that both dialects have the same migration versions and
// names, so that a schema change is never made for one database only.
func TestMigrationsPaired(t *testing.T) {
	pg, err := store.Migrations(store.DialectPostgres)
	must(t, err)
	lite, err := store.Migrations(store.DialectSQLite)
	must(t, err)
	if len(pg) == 0 || len(pg) != len(lite) {
		t.Fatalf("%d postgres migrations, %d sqlite migrations", len(pg), len(lite))
	}
	for i := range pg {
		if pg[i].Version != lite[i].Version || pg[i].Name != lite[i].Name {
			t.Errorf("migration %d: postgres %s, sqlite %s", i, pg[i].Name, lite[i].Name)
		}
		if pg[i].Version != int64(i+1) {
			t.Errorf("migration %s: versions must be 1, 2, 3, … without gaps", pg[i].Name)
		}
	}
	if _, err := store.Migrations("oracle"); err == nil {
		t.Error("Migrations(oracle) succeeded")
	}
}
