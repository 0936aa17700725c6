package store_test

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"

	"gorm.io/gorm/schema"

	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
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
		// The search indexes (FTS5 virtual tables and their shadow tables) have no records.
		q = "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE 'sqlite_%'"
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

// TestMigration3CopiesDependencies upgrades a database holding tasks with
// dependencies from version 2: each task row gets its dependencies, sorted.
func TestMigration3CopiesDependencies(t *testing.T) {
	for _, dialect := range storetest.Dialects() {
		t.Run(dialect, func(t *testing.T) {
			ctx := ctxT(t)
			db, err := store.Open(ctx, storetest.Empty(t, dialect))
			must(t, err)
			defer db.Close()
			must(t, db.MigrateTo(ctx, 2))
			for _, title := range []string{"a", "b", "c", "d"} {
				var id int64
				must(t, db.SQL().QueryRowContext(ctx, "INSERT INTO tasks (title, role, state) VALUES ($1, 'developer', 'pending') RETURNING id", title).Scan(&id))
			}
			for _, dep := range [][2]int{{4, 3}, {4, 1}, {3, 1}} {
				_, err := db.SQL().ExecContext(ctx, "INSERT INTO task_deps (task_id, depends_on_id) VALUES ($1, $2)", dep[0], dep[1])
				must(t, err)
			}
			must(t, db.Migrate(ctx))
			got, err := db.GetTasks(ctx, []int64{1, 2, 3, 4})
			must(t, err)
			want := map[int64][]int64{1: nil, 2: nil, 3: {1}, 4: {1, 3}}
			for _, tk := range got {
				if !slices.Equal(tk.DependsOn, want[tk.ID]) {
					t.Errorf("task %d depends on %v after the upgrade, want %v", tk.ID, tk.DependsOn, want[tk.ID])
				}
			}
			if len(got) != 4 {
				t.Fatalf("%d tasks after the upgrade", len(got))
			}
		})
	}
}
