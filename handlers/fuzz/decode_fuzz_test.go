// Package fuzz_test holds the native fuzz targets of the request decoders (see
// handlers.DecodeTaskBody and the others): a package of its own, whose test binary
// links no database driver, so that the instrumented build `go test -fuzz` makes
// stays small.
package fuzz_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
)

// The fuzz targets below feed arbitrary bytes to the JSON decoders of the bodies that
// create tasks, goals, templates and agents (committed corpus: testdata/fuzz/<name>;
// `make test` runs each for a bounded time). What must hold for every input: no
// panic; a refusal is a domain error a client can act on (never an internal one);
// and what is accepted holds only text every database can store (valid UTF-8 without
// NUL), so a body that decodes cannot fail later at the store.

// request is an Echo context of a POST carrying body as JSON.
func request(body []byte) echo.Context {
	req := httptest.NewRequest("POST", "/api/v1/x", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	return echo.New().NewContext(req, httptest.NewRecorder())
}

// checkOutcome fails on an internal error, and on accepted unstorable text.
func checkOutcome(t *testing.T, body []byte, v any, err error) {
	t.Helper()
	if err != nil {
		var de *models.Error
		if !errors.As(err, &de) || de.Code == models.EINTERNAL {
			t.Fatalf("%q: not a domain error a client can act on: %v", body, err)
		}
		if de.Code == models.EINVALID && len(de.Fields) == 0 {
			t.Fatalf("%q: invalid without naming a field: %v", body, err)
		}
		return
	}
	if err := models.CheckText(v); err != nil {
		t.Fatalf("%q decoded to text no database can store: %v", body, err)
	}
}

// seeds are the inputs every target starts from besides its corpus: hostile classes
// in the positions the bodies use.
var seeds = []string{
	`{}`, `[]`, `null`, `{"title":"x"}`, "{\"title\":\"a\\u0000b\"}", "{\"title\":\"\xff\"}", `{"title":"\ud800"}`,
	`{"goal_id":9223372036854775808}`, `{"goal_id":-1e400}`, `{"depends_on":[1.5]}`, `{"concurrency":2147483648}`,
	`{"workdir":"../../../etc"}`, "{\"workdir\":\"/srv/a\\u0000\"}", `{"password":"` + strings.Repeat("é", 40) + `"}`,
	`{"contract":{"completion":{"path":"../x","verify":["true"]},"verification":{"protect":["../**"],"held_out":[{"path":"/etc/x","content":"y"}]}}}`,
	"{\"a\\u0000\":1}", `{"title":"x"} {"title":"y"}`, `{"title":`, `{"roles":["a","b"],"kind":"worker","command":"true"}`,
}

// FuzzDecodeTask fuzzes the body of POST /api/v1/tasks, then validates its contract.
func FuzzDecodeTask(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		spec, err := handlers.DecodeTaskBody(request(body))
		checkOutcome(t, body, spec, err)
		if err == nil {
			c := spec.Contract
			c.Normalize()
			checkOutcome(t, body, &c, c.Validate())
		}
	})
}

// FuzzDecodeGoal fuzzes the body of POST /api/v1/goals.
func FuzzDecodeGoal(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := handlers.DecodeGoalBody(request(body))
		checkOutcome(t, body, in, err)
	})
}

// FuzzDecodeAgent fuzzes the bodies of POST and PATCH /api/v1/agents, then the
// agent's validation (workdir, sandbox paths) and password rule as CreateAgent runs
// them, without hashing.
func FuzzDecodeAgent(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		a, password, err := handlers.DecodeAgentBody(request(body))
		checkOutcome(t, body, a, err)
		if err == nil {
			a.Normalize()
			err := a.Validate()
			checkOutcome(t, body, a, err)
			if err == nil && models.WorkdirProblem(a.Workdir) != "" {
				t.Fatalf("%q: workdir %q accepted", body, a.Workdir)
			}
			if models.PasswordProblem(password) == "" && len(password) > models.MaxPasswordBytes {
				t.Fatalf("%q: a password bcrypt cannot hash accepted", body)
			}
		}
		cur := &models.Agent{Name: "w", Kind: models.KindWorker, Roles: []string{"dev"}, Command: "true", Concurrency: 1}
		err = handlers.DecodeAgentPatch(request(body), cur)
		checkOutcome(t, body, cur, err)
		if err == nil {
			cur.Normalize()
			checkOutcome(t, body, cur, cur.Validate())
		}
	})
}

// FuzzDecodeTemplate fuzzes the body of POST /api/v1/templates (JSON or YAML) as the
// handler reads it: parsed, then its text checked, then validated.
func FuzzDecodeTemplate(f *testing.F) {
	for _, s := range append(seeds, "name: t\nsteps:\n  - role: dev\n    brief: \"a\\0b\"\n", "name: t\nsteps: []\n",
		`{"name":"t","steps":[{"title":"x","contract":{"completion":{"path":"../../x"}}}]}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		tpl, err := models.ParseTemplate(body)
		if err == nil {
			err = models.CheckText(tpl)
		}
		checkOutcome(t, body, tpl, err)
		if err == nil {
			checkOutcome(t, body, tpl, tpl.Validate())
		}
	})
}
