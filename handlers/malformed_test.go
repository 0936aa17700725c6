package handlers_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestMalformedRequests sends bad bodies, templates and queries: each gets a 4xx with
// a field-level message (or a parse message for unreadable input) and changes nothing.
func TestMalformedRequests(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := []struct {
		name, method, path, body string
		status                   int
		field                    string // the field the message must name; "" for a 400
		yaml                     bool
	}{
		{"empty goal title", "POST", "/goals", `{"title":""}`, 422, "title", false},
		{"goal title not a string", "POST", "/goals", `{"title":5}`, 422, "title", false},
		{"unknown goal field", "POST", "/goals", `{"titel":"x"}`, 422, "titel", false},
		{"truncated JSON", "POST", "/goals", `{"title":`, 400, "", false},
		{"empty body", "POST", "/goals", ``, 400, "", false},
		{"two JSON values", "POST", "/goals", `{"title":"a"}{"title":"b"}`, 400, "", false},
		{"goal title too long", "POST", "/goals", `{"title":"` + long + `"}`, 422, "title", false},
		{"unknown completion type", "POST", "/tasks", `{"title":"x","contract":{"completion":{"type":"banana"}}}`, 422, "contract.completion.type", false},
		{"path escaping the workspace", "POST", "/tasks", `{"title":"x","contract":{"completion":{"type":"file","path":"../../etc/passwd"}}}`, 422, "contract.completion.path", false},
		{"absolute path", "POST", "/tasks", `{"title":"x","contract":{"completion":{"type":"file","path":"/etc/passwd"}}}`, 422, "contract.completion.path", false},
		{"negative min_length", "POST", "/tasks", `{"title":"x","contract":{"completion":{"type":"file","min_length":-5}}}`, 422, "contract.completion.min_length", false},
		{"empty verify command", "POST", "/tasks", `{"title":"x","contract":{"completion":{"verify":["go test ./...","  "]}}}`, 422, "contract.completion.verify[1]", false},
		{"negative max_attempts", "POST", "/tasks", `{"title":"x","contract":{"completion":{"max_attempts":-1}}}`, 422, "contract.completion.max_attempts", false},
		{"max_attempts 0", "POST", "/tasks", `{"title":"x","contract":{"completion":{"max_attempts":0}}}`, 422, "contract.completion.max_attempts", false},
		{"max_iterations 0", "POST", "/tasks", `{"title":"x","contract":{"completion":{"max_iterations":0}}}`, 422, "contract.completion.max_attempts", false},
		{"template step max_attempts 0", "POST", "/templates", "name: x\nsteps:\n  - role: dev\n    brief: b\n    completion: {max_attempts: 0}\n", 422, "steps[0].completion.max_attempts", true},
		{"signal without a value", "POST", "/tasks", `{"title":"x","contract":{"completion":{"type":"signal"}}}`, 422, "contract.completion.signal", false},
		{"unknown verification type", "POST", "/tasks", `{"title":"x","contract":{"verification":{"type":"sometimes"}}}`, 422, "contract.verification.type", false},
		{"bad role", "POST", "/tasks", `{"title":"x","role":"Bad Role!"}`, 422, "role", false},
		{"unknown assignee", "POST", "/tasks", `{"title":"x","assignee":"nobody"}`, 422, "assignee", false},
		{"unknown goal", "POST", "/tasks", `{"title":"x","goal_id":99999}`, 422, "goal_id", false},
		{"unknown dependency", "POST", "/tasks", `{"title":"x","depends_on":[99999]}`, 422, "depends_on", false},
		{"bad approve policy", "POST", "/tasks", `{"title":"x","approve":"Any One"}`, 422, "approve", false},
		{"unreadable template YAML", "POST", "/templates", "name: x\nsteps: [\n", 400, "", true},
		{"template without steps", "POST", "/templates", "name: x\nsteps: []\n", 422, "steps", true},
		{"template step without role", "POST", "/templates", "name: x\nsteps:\n  - brief: do it\n", 422, "steps[0].role", true},
		{"template step path escaping", "POST", "/templates", "name: x\nsteps:\n  - role: dev\n    brief: b\n    completion: {type: file, path: ../../x}\n", 422, "steps[0].completion.path", true},
		{"template bad name", "POST", "/templates", "name: 'Bad Name'\nsteps:\n  - role: dev\n    brief: b\n", 422, "name", true},
		{"template unknown step field", "POST", "/templates", "name: x\nsteps:\n  - role: dev\n    brief: b\n    colour: red\n", 422, "steps[0].colour", true},
		{"agent bad name", "POST", "/agents", `{"name":"Bad Name","kind":"human","roles":["dev"]}`, 422, "name", false},
		{"worker without command", "POST", "/agents", `{"name":"w9","kind":"worker","roles":["dev"]}`, 422, "command", false},
		{"agent unknown kind", "POST", "/agents", `{"name":"r2","kind":"robot","roles":["dev"]}`, 422, "kind", false},
		{"bad state filter", "GET", "/tasks?state=bogus", ``, 422, "state", false},
		{"negative event cursor", "GET", "/events?after=-1", ``, 422, "after", false},
		{"notes not a string", "POST", "/tasks/1/verify", `{"notes":3}`, 422, "notes", false},
		{"goal reject without fix tasks", "POST", "/goals/1/reject", `{"reason":"no"}`, 422, "fix_tasks", false},
		{"run without template", "POST", "/goals/1/runs", `{}`, 422, "template", false},
	}
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, "lead", "admin")
		e.agent("bob", models.KindHuman, "developer")
		e.must(201, "lena", "POST", "/goals", map[string]any{"title": "G"})
		e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "T", "assignee": "bob"})
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				before := e.eventCount()
				var r resp
				if tc.yaml {
					r = e.raw("lena", tc.method, tc.path, "application/yaml", tc.body)
				} else {
					r = e.do("lena", tc.method, tc.path, tc.body)
				}
				if r.Status != tc.status {
					t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Raw)
				}
				if msg := r.errField("message"); msg == "" {
					t.Fatalf("no error message: %s", r.Raw)
				}
				if tc.field != "" {
					if _, ok := r.fields()[tc.field]; !ok {
						t.Fatalf("no message for field %q: %s", tc.field, r.Raw)
					}
				}
				if e.eventCount() != before {
					t.Fatal("a refused request changed the database")
				}
			})
		}
	})
}

// TestAuthentication: no token or a wrong one is 401 and reveals nothing.
func TestAuthentication(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, "lead")
		if r := e.do("", "GET", "/goals", nil); r.Status != 401 || r.errCode() != models.EUNAUTHORIZED {
			t.Fatalf("no token: %d %s", r.Status, r.Raw)
		}
		e.tokens["mallory"] = "cs_not-a-real-token"
		if r := e.do("mallory", "GET", "/goals", nil); r.Status != 401 {
			t.Fatalf("bad token: %d", r.Status)
		}
		if r := e.do("lena", "GET", "/goals", nil); r.Status != 200 {
			t.Fatalf("good token: %d", r.Status)
		}
		if r := e.do("lena", "POST", "/agents", `{"name":"x","kind":"human","roles":["a"]}`); r.Status != 403 || r.errRule() != "admin_only" {
			t.Fatalf("non-admin creating an agent: %d %s", r.Status, r.Raw)
		}
	})
}

// raw sends body with a given content type.
func (e *apiEnv) raw(as, method, path, ctype, body string) resp {
	e.t.Helper()
	return e.send(as, method, path, ctype, strings.NewReader(body))
}
