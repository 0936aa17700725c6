package handlers_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner"
)

// deliverableEnv is an API server with the deliverable routes over a data dir whose
// task has a verified attempt that kept two files, beside a file the manifest does not
// list and a secret outside every deliverable.
type deliverableEnv struct {
	svc               *models.Service
	srv               *httptest.Server
	api               *handlers.DeliverableAPI
	root              string
	task, other, bare int64
	lead              string // a lead's token
	files             map[string]string
}

func newDeliverableEnv(t *testing.T, dialect string) *deliverableEnv {
	t.Helper()
	db, svc := handlertest.Open(t, dialect)
	root := t.TempDir()
	files := runner.NewDeliverableFiles(root)
	api := handlers.NewDeliverableAPI(svc.Store(), files)
	_, srv := handlertest.Serve(t, handlers.Deps{Service: svc, Extra: []func(*echo.Echo){func(e *echo.Echo) {
		api.Register(e.Group("/api/v1", handlers.BearerAuth(svc.Tokens)))
	}}})
	handlertest.CreateAgent(t, svc, "lee", models.KindHuman, "", models.RoleLead)
	bot := handlertest.CreateAgent(t, svc, "bot", models.KindWorker, "", "developer")
	env := &deliverableEnv{svc: svc, srv: srv, api: api, root: root, lead: handlertest.CreateToken(t, svc, "lee", "test"),
		files: map[string]string{"out/a.txt": "hello\n", "b c.md": "# two"}}
	mk := func(title string) int64 {
		tk, err := svc.Tasks.CreateTask(context.Background(), models.System, models.TaskSpec{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		return tk.ID
	}
	env.task, env.other, env.bare = mk("delivers"), mk("another"), mk("keeps nothing")
	for _, id := range []int64{env.task, env.other} {
		dlKeep(t, db, root, id, bot.ID, env.files)
	}
	// The bare task passed without a deliverable (a worktree task, say).
	dlMust(t, db.CreateAttempt(context.Background(), &models.Attempt{TaskID: env.bare, Number: 1, AgentID: bot.ID, Outcome: models.OutcomePassed}))
	return env
}

// dlKeep records a verified attempt 1 of task id that kept files, and writes the kept
// copies where the runner keeps them, with a file the manifest does not list.
func dlKeep(t *testing.T, db *store.DB, root string, id, agent int64, files map[string]string) {
	t.Helper()
	dir := filepath.Join(root, "meta", itoa(id), "deliverable", "1")
	d := &models.Deliverable{}
	for _, p := range []string{"b c.md", "out/a.txt"} {
		sum := sha256.Sum256([]byte(files[p]))
		d.Files = append(d.Files, models.DeliverableFile{Path: p, Size: int64(len(files[p])), SHA256: hex.EncodeToString(sum[:])})
		dlWrite(t, filepath.Join(dir, p), files[p])
	}
	dlWrite(t, filepath.Join(dir, "unlisted.txt"), "not in the manifest")
	dlWrite(t, filepath.Join(root, "secret.txt"), "the runner's secret")
	fin := time.Now().UTC()
	dlMust(t, db.CreateAttempt(context.Background(), &models.Attempt{TaskID: id, Number: 1, AgentID: agent, Outcome: models.OutcomePassed, Deliverable: d, FinishedAt: &fin}))
}

func dlWrite(t *testing.T, path, body string) {
	t.Helper()
	dlMust(t, os.MkdirAll(filepath.Dir(path), 0o755))
	dlMust(t, os.WriteFile(path, []byte(body), 0o644))
}

func dlMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// get sends a GET with token and returns the response with its whole body.
func (env *deliverableEnv) get(t *testing.T, token, path string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, env.srv.URL+"/api/v1"+path, nil)
	dlMust(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	dlMust(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// TestDeliverableAPI: the manifest, a listed file's bytes as an opaque attachment and
// every file in a .tar.gz; a task without a deliverable is 404.
func TestDeliverableAPI(t *testing.T) {
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		env := newDeliverableEnv(t, dialect)
		base := "/tasks/" + itoa(env.task) + "/deliverable"

		res, body := env.get(t, env.lead, base)
		var m handlers.DeliverableManifest
		if res.StatusCode != 200 || json.Unmarshal(body, &m) != nil || m.Attempt != 1 || m.TaskID != env.task || len(m.Files) != 2 {
			t.Fatalf("manifest: %d %s", res.StatusCode, body)
		}
		for path, want := range map[string]string{"/files/out/a.txt": "hello\n", "/files/b%20c.md": "# two"} {
			res, body := env.get(t, env.lead, base+path)
			if res.StatusCode != 200 || string(body) != want {
				t.Errorf("%s: %d %q, want %q", path, res.StatusCode, body, want)
			}
			h := res.Header
			if h.Get("Content-Type") != "application/octet-stream" || h.Get("X-Content-Type-Options") != "nosniff" ||
				!strings.HasPrefix(h.Get("Content-Disposition"), `attachment; filename="`) {
				t.Errorf("%s: headers %v", path, h)
			}
		}
		if res, _ := env.get(t, env.lead, base+"/files/b%20c.md"); res.Header.Get("Content-Disposition") != `attachment; filename="b_c.md"` {
			t.Errorf("Content-Disposition %q", res.Header.Get("Content-Disposition"))
		}

		res, body = env.get(t, env.lead, base+".tar.gz")
		if res.StatusCode != 200 {
			t.Fatalf("archive: %d %s", res.StatusCode, body)
		}
		got := dlUntar(t, body)
		want := map[string]string{}
		for p, b := range env.files {
			want["task-"+itoa(env.task)+"/"+p] = b
		}
		if len(got) != len(want) {
			t.Fatalf("archive holds %v, want %v", got, want)
		}
		for name, b := range want {
			if got[name] != b {
				t.Errorf("archive's %s = %q, want %q", name, got[name], b)
			}
		}

		for _, path := range []string{"/tasks/" + itoa(env.bare) + "/deliverable", "/tasks/" + itoa(env.bare) + "/deliverable/files/out/a.txt",
			"/tasks/" + itoa(env.bare) + "/deliverable.tar.gz", "/tasks/999999/deliverable"} {
			res, body := env.get(t, env.lead, path)
			if res.StatusCode != 404 || !strings.Contains(string(body), models.ENOTFOUND) {
				t.Errorf("%s: %d %s, want 404 ENOTFOUND", path, res.StatusCode, body)
			}
		}
	})
}

// TestDeliverableServesOnlyListedFiles: a file the manifest does not list is 404 even
// when it lies beside the kept files, and so is any path that climbs out, escaped or
// not; no answer names the data dir.
func TestDeliverableServesOnlyListedFiles(t *testing.T) {
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		env := newDeliverableEnv(t, dialect)
		base := "/tasks/" + itoa(env.task) + "/deliverable/files/"
		for _, p := range []string{
			"unlisted.txt",
			"../../../../secret.txt", "..%2F..%2F..%2F..%2Fsecret.txt", "%2e%2e/%2e%2e/%2e%2e/%2e%2e/secret.txt",
			"out/../unlisted.txt", "out/..%2f..%2f1.json", "/out/a.txt", "out//a.txt", "out/a.txt%00",
			"..%2F..%2F..%2F" + itoa(env.other) + "%2Fdeliverable%2F1%2Funlisted.txt",
		} {
			res, body := env.get(t, env.lead, base+p)
			if res.StatusCode != 404 && res.StatusCode != 400 && res.StatusCode != 422 { // 422: a NUL, refused at the input boundary
				t.Errorf("%s: %d %q, want 404, 400 or 422", p, res.StatusCode, body)
			}
			if strings.Contains(string(body), "the runner's secret") || strings.Contains(string(body), env.root) ||
				strings.Contains(string(body), "not in the manifest") {
				t.Errorf("%s: the answer shows what it must not: %s", p, body)
			}
		}
	})
}

// TestDeliverableRefusesAnotherTasksAttemptToken: a worker's attempt token of one task
// reads no other task's deliverable: the routes are outside its scope, and the
// handlers check the task as GET /tasks/{id} does, should a route ever be let in.
func TestDeliverableRefusesAnotherTasksAttemptToken(t *testing.T) {
	handlertest.ForEachDialect(t, func(t *testing.T, dialect string) {
		env := newDeliverableEnv(t, dialect)
		ctx := context.Background()
		bot, err := env.svc.Store().GetAgentByName(ctx, "bot")
		dlMust(t, err)
		secret, _, err := env.svc.Tokens.IssueAttemptToken(ctx, bot.ID, env.other, 1, time.Hour)
		dlMust(t, err)
		for _, p := range []string{"/deliverable", "/deliverable/files/out/a.txt", "/deliverable.tar.gz"} {
			res, body := env.get(t, secret, "/tasks/"+itoa(env.task)+p)
			if res.StatusCode != 403 || !strings.Contains(string(body), models.RuleAttemptTokenScope) || strings.Contains(string(body), "hello") {
				t.Errorf("%s with another task's attempt token: %d %s", p, res.StatusCode, body)
			}
		}

		// The handlers' own check, without the middleware's.
		scoped, err := env.svc.Tokens.Authenticate(ctx, secret)
		dlMust(t, err)
		e := echo.New()
		for _, c := range []struct {
			task int64
			want int
		}{{env.task, 403}, {env.other, 200}} {
			for name, h := range map[string]echo.HandlerFunc{"manifest": env.api.Manifest, "file": env.api.File, "archive": env.api.Archive} {
				rec := httptest.NewRecorder()
				ec := e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
				ec.SetParamNames("id", "*")
				ec.SetParamValues(itoa(c.task), "out/a.txt")
				handlers.SetActor(ec, scoped)
				err := h(ec)
				status := rec.Code
				if err != nil {
					status = dlStatus(err)
				}
				if status != c.want {
					t.Errorf("%s of task %d with the attempt token of task %d: %d (%v), want %d", name, c.task, env.other, status, err, c.want)
				}
			}
		}
	})
}

// dlStatus is the status the central error handler gives err.
func dlStatus(err error) int {
	e := echo.New()
	e.HTTPErrorHandler = handlers.NewErrorHandler(handlertest.DiscardLog(), nil).Handle
	rec := httptest.NewRecorder()
	e.HTTPErrorHandler(err, e.NewContext(httptest.NewRequest(http.MethodGet, "/api/v1/x", nil), rec))
	return rec.Code
}

func dlUntar(t *testing.T, b []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	dlMust(t, err)
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		dlMust(t, err)
		body, err := io.ReadAll(tr)
		dlMust(t, err)
		out[h.Name] = string(body)
	}
}
