package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
)

// each runs fn on a fresh store of every dialect, in parallel.
func each(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	for _, d := range storetest.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, storetest.Open(t, d))
		})
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// ts is a fixed time with microseconds, which both databases keep.
func ts(minute int) time.Time { return time.Date(2025, 3, 4, 5, minute, 7, 123456000, time.UTC) }

func tsp(minute int) *time.Time { v := ts(minute); return &v }

func i64(v int64) *int64 { return &v }

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := models.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// equal fails with the first differing field when got and want differ.
func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if path, ok := firstDiff("", reflect.ValueOf(got), reflect.ValueOf(want)); !ok {
		t.Fatalf("%s differs at %s\n got: %s\nwant: %s", what, path.path, path.got, path.want)
	}
}

type diff struct{ path, got, want string }

func show(v reflect.Value) string {
	if !v.IsValid() {
		return "<invalid>"
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "nil"
		}
		v = v.Elem()
	}
	if v.CanInterface() {
		return fmt.Sprintf("%#v", v.Interface())
	}
	return v.String()
}

func firstDiff(path string, a, b reflect.Value) (diff, bool) {
	if a.IsValid() != b.IsValid() || (a.IsValid() && a.Type() != b.Type()) {
		return diff{path, show(a), show(b)}, false
	}
	if !a.IsValid() {
		return diff{}, true
	}
	if a.Type() == reflect.TypeOf(time.Time{}) {
		if !a.Interface().(time.Time).Equal(b.Interface().(time.Time)) {
			return diff{path, show(a), show(b)}, false
		}
		return diff{}, true
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return diff{path, show(a), show(b)}, false
			}
			return diff{}, true
		}
		return firstDiff(path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !a.Type().Field(i).IsExported() {
				continue // not stored
			}
			if d, ok := firstDiff(path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i)); !ok {
				return d, false
			}
		}
		return diff{}, true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return diff{path, show(a), show(b)}, false
		}
		for i := 0; i < a.Len(); i++ {
			if d, ok := firstDiff(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); !ok {
				return d, false
			}
		}
		return diff{}, true
	}
	if !reflect.DeepEqual(a.Interface(), b.Interface()) {
		return diff{path, show(a), show(b)}, false
	}
	return diff{}, true
}

// allSet fails when a field of the struct v points to is zero, so that a round-trip
// test exercises every field.
func allSet(t *testing.T, v any, except ...string) {
	t.Helper()
	rv := reflect.ValueOf(v).Elem()
outer:
	for i := 0; i < rv.NumField(); i++ {
		name := rv.Type().Field(i).Name
		for _, e := range except {
			if e == name {
				continue outer
			}
		}
		if rv.Field(i).IsZero() {
			t.Fatalf("fixture %T leaves %s zero: set every field", v, name)
		}
	}
}

// agent creates a worker agent named name with role.
func agent(t *testing.T, tx models.Tx, name, role string) *models.Agent {
	t.Helper()
	a := &models.Agent{Name: name, Kind: models.KindWorker, Roles: []string{role}, Command: "true", Concurrency: 1}
	must(t, tx.CreateAgent(context.Background(), a))
	return a
}

// task creates a pending task of role.
func task(t *testing.T, tx models.Tx, creator int64, role string, goalID *int64, deps ...int64) *models.Task {
	t.Helper()
	tk := &models.Task{Title: "t", Role: role, CreatorID: creator, GoalID: goalID, DependsOn: deps}
	must(t, tx.CreateTask(context.Background(), tk))
	return tk
}

// recent fails unless v is within a minute of now (a time the store set).
func recent(t *testing.T, v time.Time) {
	t.Helper()
	if d := time.Since(v); d < -time.Minute || d > time.Minute {
		t.Fatalf("time %v is not now", v)
	}
}
