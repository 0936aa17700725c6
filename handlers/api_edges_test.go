package handlers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
)

// allowedOf is the allowed list of a 409.
func allowedOf(r resp) []string {
	m, _ := r.Body["error"].(map[string]any)
	list, _ := m["allowed"].([]any)
	out := []string{}
	for _, a := range list {
		out = append(out, a.(string))
	}
	return out
}

// TestConflictListsOnlyCallersActions: a transition the task's state refuses is 409
// with the state, and allowed holds only the actions this caller may take from it
// (roles, assignee, creator, separation of duties), not every legal one.
func TestConflictListsOnlyCallersActions(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, "lead")
		e.agent("bob", models.KindHuman, "developer")
		e.agent("carl", models.KindHuman, "developer")
		e.agent("tess", models.KindHuman, "tester")
		id := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "T", "assignee": "bob", "verify": "tester"}).num("id")
		for as, want := range map[string][]string{
			"lena": {"assign", "cancel", "reassign"}, // the creator and a lead; not the assignee
			"bob":  {"start"},                        // the assignee
			"carl": {},                               // neither
		} {
			r := e.do(as, "POST", fmt.Sprintf("/tasks/%d/approve", id), nil)
			if r.Status != 409 || r.errCode() != models.ECONFLICT || r.errState() != "assigned" {
				t.Fatalf("%s approving an assigned task: %d %s", as, r.Status, r.Raw)
			}
			if got := allowedOf(r); !slices.Equal(got, want) {
				t.Errorf("%s: allowed %v, want %v (all legal: %v)", as, got, want, models.AllowedActions(models.TaskAssigned))
			}
		}
		// Separation of duties: in review, the builder may not approve or verify.
		e.must(200, "bob", "POST", fmt.Sprintf("/tasks/%d/start", id), nil)
		e.must(200, "bob", "POST", fmt.Sprintf("/tasks/%d/submit", id), map[string]any{"summary": "done"})
		if r := e.do("bob", "POST", fmt.Sprintf("/tasks/%d/verify", id), map[string]any{"notes": "x"}); r.Status != 409 || !slices.Equal(allowedOf(r), []string{}) {
			t.Errorf("the builder is offered its own review: %d %s", r.Status, r.Raw)
		}
		if r := e.do("tess", "POST", fmt.Sprintf("/tasks/%d/verify", id), map[string]any{"notes": "x"}); r.Status != 409 || !slices.Equal(allowedOf(r), []string{"approve", "reject"}) {
			t.Errorf("another agent in review (approve policy runner: any eligible agent for a person's work): %d %s", r.Status, r.Raw)
		}
	})
}

// TestJSONContentTypeIs415: a body in another media type than JSON on a JSON route
// is 415 unsupported_media_type and changes nothing; JSON with parameters, a +json
// type and no Content-Type at all are read.
func TestJSONContentTypeIs415(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, "lead")
		before := e.eventCount()
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/yaml", "not a media type"} {
			r := e.raw("lena", "POST", "/goals", ct, `{"title":"G"}`)
			if r.Status != 415 || r.errCode() != models.EUNSUPPORTED || !strings.Contains(r.errField("message"), "application/json") {
				t.Errorf("%s: %d %s", ct, r.Status, r.Raw)
			}
		}
		if e.eventCount() != before {
			t.Fatal("a refused body changed the database")
		}
		for _, ct := range []string{"application/json; charset=utf-8", "application/merge-patch+json", ""} {
			if r := e.raw("lena", "POST", "/goals", ct, `{"title":"G"}`); r.Status != 201 {
				t.Errorf("%q: %d %s", ct, r.Status, r.Raw)
			}
		}
	})
}

// TestInvalidUTF8NamesTheField: a string that is not valid UTF-8 is 422 naming its
// field, nested and in lists, instead of being stored with replacement characters.
func TestInvalidUTF8NamesTheField(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, "lead", "admin")
		for _, tc := range []struct{ path, body, field string }{
			{"/goals", "{\"title\":\"ok\",\"description\":\"bad \xff here\"}", "description"},
			{"/goals", "{\"title\":\"\xc3\x28\"}", "title"},
			{"/tasks", "{\"title\":\"x\",\"contract\":{\"completion\":{\"type\":\"file\",\"path\":\"out/\xfe.md\"}}}", "contract.completion.path"},
			{"/tasks", "{\"title\":\"x\",\"contract\":{\"completion\":{\"verify\":[\"go test ./...\",\"echo \xed\xa0\x80\"]}}}", "contract.completion.verify[1]"},
			{"/goals", "{\"title\":\"ok\",\"b\xffd\":1}", "body"},
		} {
			before := e.eventCount()
			r := e.do("lena", "POST", tc.path, tc.body)
			if r.Status != 422 || r.errCode() != models.EINVALID {
				t.Errorf("%s %q: %d %s", tc.path, tc.body, r.Status, r.Raw)
				continue
			}
			if msg, _ := r.fields()[tc.field].(string); !strings.Contains(msg, "UTF-8") {
				t.Errorf("%s %q: no UTF-8 message for %s: %s", tc.path, tc.body, tc.field, r.Raw)
			}
			if e.eventCount() != before {
				t.Errorf("%s %q changed the database", tc.path, tc.body)
			}
		}
	})
}

// TestNumbersOutOfRangeNameTheRange: a number out of its field's range, in a body or
// a query, is 422 naming the field and the range.
func TestNumbersOutOfRangeNameTheRange(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, "lead", "admin")
		id := e.must(201, "lena", "POST", "/goals", map[string]any{"title": "G"}).num("id")
		for _, tc := range []struct{ method, path, body, field, want string }{
			{"POST", "/tasks", `{"title":"x","goal_id":1e30}`, "goal_id", "between -9223372036854775808 and 9223372036854775807"},
			{"POST", "/tasks", `{"title":"x","depends_on":[1.5]}`, "depends_on", "a whole number between"},
			{"POST", "/tasks", `{"title":"x","contract":{"completion":{"max_attempts":100000}}}`, "contract.completion.max_attempts", "at most"},
			{"POST", fmt.Sprintf("/tasks/%d/link", 1), `{"goal_id":-1e40}`, "goal_id", "between"},
			{"GET", "/tasks?limit=5000", "", "limit", "between 1 and 1000"},
			{"GET", "/tasks?limit=0", "", "limit", "between 1 and 1000"},
			{"GET", "/goals?limit=1001", "", "limit", "between 1 and 1000"},
			{"GET", "/inbox?limit=-3", "", "limit", "between 1 and 1000"},
			{"GET", "/ledger?limit=99999", "", "limit", "between 1 and 1000"},
			{"GET", "/events?after=-1", "", "after", "between 0 and 9223372036854775807"},
			{"GET", "/events?after=99999999999999999999", "", "after", "between 0 and"},
		} {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			r := e.do("lena", tc.method, tc.path, body)
			msg, _ := r.fields()[tc.field].(string)
			if r.Status != 422 || !strings.Contains(msg, tc.want) {
				t.Errorf("%s %s %s: %d, %s: %q, want it to say %q: %s", tc.method, tc.path, tc.body, r.Status, tc.field, msg, tc.want, r.Raw)
			}
		}
		_ = id
	})
}

// TestAssigneeIsAssignee: assign and reassign take the agent as assignee (agent stays
// an alias); two different agents in the two are refused; refusals about the agent,
// on those actions and on creating a task, name the field assignee.
func TestAssigneeIsAssignee(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		e.agent("lena", models.KindHuman, "lead")
		bob := e.agent("bob", models.KindHuman, "developer")
		carl := e.agent("carl", models.KindHuman, "developer")
		id := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "T"}).num("id")
		path := fmt.Sprintf("/tasks/%d/assign", id)
		if r := e.must(200, "lena", "POST", path, map[string]any{"assignee": "bob"}); r.num("assignee_id") != bob.ID {
			t.Fatalf("assign by assignee: %s", r.Raw)
		}
		if r := e.must(200, "lena", "POST", path, map[string]any{"agent": "carl"}); r.num("assignee_id") != carl.ID {
			t.Fatalf("assign by the alias agent: %s", r.Raw)
		}
		if r := e.must(200, "lena", "POST", path, map[string]any{"assignee": "bob", "agent": "BOB"}); r.num("assignee_id") != bob.ID {
			t.Fatalf("assign by both, the same: %s", r.Raw)
		}
		before := e.eventCount()
		for _, tc := range []struct {
			path  string
			body  map[string]any
			field string
		}{
			{path, map[string]any{"assignee": "bob", "agent": "carl"}, "agent"},
			{path, map[string]any{"assignee": "zed"}, "assignee"},
			{path, map[string]any{}, "assignee"},
			{fmt.Sprintf("/tasks/%d/reassign", id), map[string]any{"assignee": "zed"}, "assignee"},
			{"/tasks", map[string]any{"title": "x", "assignee": "zed"}, "assignee"},
		} {
			r := e.do("lena", "POST", tc.path, tc.body)
			if _, ok := r.fields()[tc.field]; r.Status != 422 || !ok {
				t.Errorf("%s %v: %d %s, want 422 naming %s", tc.path, tc.body, r.Status, r.Raw, tc.field)
			}
			if _, ok := r.fields()["agent"]; ok && tc.field != "agent" {
				t.Errorf("%s %v names agent: %s", tc.path, tc.body, r.Raw)
			}
		}
		if e.eventCount() != before {
			t.Fatal("a refused assignment changed the database")
		}
	})
}

// TestOutputDownload: GET /tasks/{id}/output serves the verified output the runner
// fingerprinted, as an attachment, read beneath the workspace only: a link on the
// way, a path climbing out, a task without one and a reader outside the task's scope
// are refused, and no answer names a server path.
func TestOutputDownload(t *testing.T) {
	forEachDialect(t, func(t *testing.T, e *apiEnv) {
		ctx := context.Background()
		e.agent("lena", models.KindHuman, "lead")
		bot := e.agent("bot", models.KindWorker, "developer")
		ws := t.TempDir()
		secret := filepath.Join(t.TempDir(), "secret.md")
		must(t, os.WriteFile(secret, []byte("server secret"), 0o644))
		must(t, os.MkdirAll(filepath.Join(ws, "out"), 0o755))
		must(t, os.WriteFile(filepath.Join(ws, "out", "report.md"), []byte("# Report\n"), 0o644))
		must(t, os.Symlink(secret, filepath.Join(ws, "out", "link.md")))
		must(t, os.Symlink(filepath.Dir(secret), filepath.Join(ws, "dirlink")))

		newTask := func(output string) int64 {
			id := e.must(201, "lena", "POST", "/tasks", map[string]any{"title": "T " + output}).num("id")
			if output == "" {
				return id
			}
			err := e.db.InTx(ctx, func(tx models.Tx) error {
				lt, err := tx.LockTask(ctx, id)
				if err != nil {
					return err
				}
				lt.Fingerprint = &models.Fingerprint{Dir: ws, Output: output, At: time.Now(),
					Files: []models.FingerprintFile{{Path: output, Hash: "x"}}}
				return tx.UpdateTask(ctx, lt)
			})
			must(t, err)
			return id
		}
		good := newTask("out/report.md")
		r := e.send("lena", "GET", fmt.Sprintf("/tasks/%d/output", good), "", nil)
		if r.Status != 200 || string(r.Raw) != "# Report\n" {
			t.Fatalf("download: %d %s", r.Status, r.Raw)
		}
		hdr := headerOf(t, e, "lena", fmt.Sprintf("/tasks/%d/output", good))
		if hdr.Get("Content-Disposition") != `attachment; filename="report.md"` || hdr.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("headers %v", hdr)
		}
		for _, output := range []string{"out/link.md", "../" + filepath.Base(filepath.Dir(secret)) + "/secret.md", "dirlink/secret.md", "/etc/passwd", "out/missing.md", ""} {
			id := newTask(output)
			r := e.send("lena", "GET", fmt.Sprintf("/tasks/%d/output", id), "", nil)
			if r.Status != 404 || strings.Contains(string(r.Raw), "server secret") {
				t.Errorf("output %q: %d %s", output, r.Status, r.Raw)
			}
			for _, leak := range []string{ws, secret, filepath.Dir(secret)} {
				if strings.Contains(string(r.Raw), leak) {
					t.Errorf("output %q: the answer names %s: %s", output, leak, r.Raw)
				}
			}
		}
		// An attempt token (a worker's) is not a reader of outputs.
		other := newTask("out/report.md")
		tok, _, err := e.svc.Tokens.IssueAttemptToken(ctx, bot.ID, other, 1, time.Hour)
		must(t, err)
		e.tokens["attempt"] = tok
		if r := e.send("attempt", "GET", fmt.Sprintf("/tasks/%d/output", good), "", nil); r.Status != 403 || strings.Contains(string(r.Raw), "Report") {
			t.Errorf("another task's attempt token: %d %s", r.Status, r.Raw)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// headerOf GETs path as agent and returns the response's headers.
func headerOf(t *testing.T, e *apiEnv, as, path string) http.Header {
	t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+"/api/v1"+path, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+e.tokens[as])
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	res.Body.Close()
	return res.Header
}

// TestOutputChangedSinceVerified: the workspace's output file is marked changed when
// its hash is no longer the fingerprint's, and not while it is.
func TestOutputChangedSinceVerified(t *testing.T) {
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "report.md"), []byte("# Report\n"), 0o644))
	sum := sha256.Sum256([]byte("# Report\n"))
	task := &models.Task{ID: 7, Fingerprint: &models.Fingerprint{Dir: ws, Output: "report.md",
		Files: []models.FingerprintFile{{Path: "report.md", Hash: hex.EncodeToString(sum[:])}}}}
	open := func() bool {
		out, err := handlers.OpenOutput(context.Background(), task, nil, nil)
		must(t, err)
		out.Close()
		return out.Changed
	}
	if open() {
		t.Fatal("the verified file is marked changed")
	}
	must(t, os.WriteFile(filepath.Join(ws, "report.md"), []byte("# Report, edited\n"), 0o644))
	if !open() {
		t.Fatal("an edited file is not marked changed")
	}
}
