package handlers_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestUnstorableTextNamesTheField: a NUL in a JSON string, a NUL or invalid UTF-8 in
// a path parameter or a query value, and a NUL a YAML escape makes are 422 naming the
// field, on both databases alike, and change nothing (on PostgreSQL they were 500,
// on SQLite stored).
func TestUnstorableTextNamesTheField(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, "lead", "admin", "editor")
		for _, tc := range []struct{ method, path, ctype, body, field, want string }{
			{"POST", "/goals", "application/json", `{"title":"a\u0000b"}`, "title", "NUL"},
			{"POST", "/goals", "application/json", `{"title":"ok","description":"x\u0000"}`, "description", "NUL"},
			{"POST", "/tasks", "application/json", `{"title":"x","contract":{"completion":{"verify":["true","a\u0000"]}}}`, "contract.completion.verify[1]", "NUL"},
			{"POST", "/goals", "application/json", `{"title":"ok","a\u0000":1}`, "body", "NUL"},
			{"POST", "/agents", "application/json", `{"name":"w","kind":"worker","command":"true","roles":["a"],"workdir":"/srv/\u0000"}`, "workdir", "NUL"},
			{"GET", "/tasks?state=a%00b", "", "", "state", "NUL"},
			{"GET", "/tasks?assignee=%ff", "", "", "assignee", "UTF-8"},
			{"GET", "/goals/%ff", "", "", "id", "UTF-8"},
			{"GET", "/templates/a%00b", "", "", "name", "NUL"},
			{"POST", "/templates", "application/yaml", "name: t\ndescription: \"a\\0b\"\nsteps:\n  - role: dev\n    brief: b\n", "description", "NUL"},
		} {
			before := e.eventCount()
			r := e.raw("lena", tc.method, tc.path, tc.ctype, tc.body)
			msg, _ := r.fields()[tc.field].(string)
			if r.Status != 422 || !strings.Contains(msg, tc.want) {
				t.Errorf("%s %s %q: %d, want 422 naming %s (%s): %s", tc.method, tc.path, tc.body, r.Status, tc.field, tc.want, r.Raw)
			}
			if e.eventCount() != before {
				t.Errorf("%s %s %q changed the database", tc.method, tc.path, tc.body)
			}
		}
	})
}

// TestTemplateVersionInRange: a template version beyond the 32-bit column is 422
// naming the range, not a database error.
func TestTemplateVersionInRange(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, "lead")
		for _, v := range []string{"9223372036854775807", "2147483648", "0", "-1", "x"} {
			r := e.do("lena", "GET", "/templates/any?version="+v, nil)
			if msg, _ := r.fields()["version"].(string); r.Status != 422 || !strings.Contains(msg, "between 1 and 2147483647") {
				t.Errorf("version=%s: %d %s", v, r.Status, r.Raw)
			}
		}
	})
}

// TestLongPasswordIsAFieldError: a password over bcrypt's 72 bytes is 422 naming
// password (it was 500), counted in bytes; 72 bytes is accepted.
func TestLongPasswordIsAFieldError(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("ada", models.KindHuman, "admin")
		for name, pw := range map[string]string{"p1": strings.Repeat("a", 73), "p2": strings.Repeat("é", 37), "p3": strings.Repeat("€", 30)} {
			r := e.do("ada", "POST", "/agents", map[string]any{"name": name, "kind": "human", "roles": []string{"a"}, "password": pw})
			if msg, _ := r.fields()["password"].(string); r.Status != 422 || !strings.Contains(msg, "72 bytes") {
				t.Errorf("%d-byte password: %d %s", len(pw), r.Status, r.Raw)
			}
		}
		e.must(201, "ada", "POST", "/agents", map[string]any{"name": "p4", "kind": "human", "roles": []string{"a"}, "password": strings.Repeat("é", 36)})
	})
}

// TestWorkdirMustNameADirectory: a workdir that is relative, climbs with "..", is "/"
// or holds NUL is refused naming workdir, on create and on change; an absolute one is
// kept, cleaned of a trailing slash.
func TestWorkdirMustNameADirectory(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("ada", models.KindHuman, "admin")
		e.must(201, "ada", "POST", "/agents", map[string]any{"name": "w", "kind": "worker", "command": "true", "roles": []string{"a"}})
		for _, w := range []string{"../../../etc", "relative", "/srv/../etc", "/srv/./x", "/", "///", "~/src"} {
			r := e.do("ada", "POST", "/agents", map[string]any{"name": "w2", "kind": "worker", "command": "true", "roles": []string{"a"}, "workdir": w})
			if _, ok := r.fields()["workdir"]; r.Status != 422 || !ok {
				t.Errorf("create with workdir %q: %d %s", w, r.Status, r.Raw)
			}
			r = e.do("ada", "PATCH", "/agents/w", map[string]any{"workdir": w})
			if _, ok := r.fields()["workdir"]; r.Status != 422 || !ok {
				t.Errorf("change to workdir %q: %d %s", w, r.Status, r.Raw)
			}
		}
		if r := e.must(200, "ada", "PATCH", "/agents/w", map[string]any{"workdir": "/srv/checkout/"}); r.str("workdir") != "/srv/checkout" {
			t.Errorf("an absolute workdir: %s", r.Raw)
		}
	})
}
