//go:build linux && (amd64 || arm64)

package pages_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/workspace"
)

// hiddenTest is the held-out test of TestHeldOutFeedbackTeachesTheFix: its name, its
// file, its input and its expected value must never reach the worker.
var hiddenTest = contract.HeldOutTest{Path: "calc_hidden_test.go",
	Content: "package calc\n\nimport \"testing\"\n\nfunc TestAddLargeNumbers(t *testing.T) {\n" +
		"\tif got := Add(1000, 234); got != 1234 {\n\t\tt.Errorf(\"Add(1000, 234) = %d, want 1234\", got)\n\t}\n}\n"}

// hiddenSecrets are the pieces of hiddenTest a revision brief must not carry.
var hiddenSecrets = []string{"TestAddLargeNumbers", "calc_hidden_test.go", "calc_hidden", "Add(1000, 234)", "1000", "1234", "766"}

// TestHeldOutFeedbackTeachesTheFix is issue 30's item 6 end to end: a real worker,
// run by the runner pool with the sandbox on, special-cases the visible test of a Go
// module on its first attempt, so the held-out test fails. The attempt-2 brief on
// disk says that one held-out test failed and carries none of its name, file, input
// or expected value; neither do the attempt's diagnosis, checks and criteria, nor the
// task as the worker's token or a developer reads it (API and page). The lead reads
// them all on the task page and through the API: the test's name and message and the
// output the worker was not shown. The worker, told only that, fixes Add and is
// verified.
func TestHeldOutFeedbackTeachesTheFix(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go is needed: %v", err)
	}
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	db := storetest.Open(t, "sqlite")
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	e := newEnvOn(t, db, envOptions{})
	e.team()
	ctx := context.Background()
	rules := models.DefaultRules()
	must(t, e.svc.Templates.SaveRules(ctx, e.agents["lead"], &rules))

	project := filepath.Join(dir, "calc")
	must(t, os.MkdirAll(project, 0o755))
	for name, content := range map[string]string{
		"go.mod":  "module calc\n\ngo 1.21\n",
		"calc.go": "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a - b }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n" +
			"\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
	} {
		must(t, os.WriteFile(filepath.Join(project, name), []byte(content), 0o644))
	}
	// First attempt: special-case the visible test. A revision: fix Add.
	worker := `cat > /dev/null; ` +
		`if grep -q 'Revision: attempt' "$COUNTERSIGN_BRIEF_FILE"; then ` +
		`printf 'package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n' > calc.go; ` +
		`else printf 'package calc\n\n// Add adds.\nfunc Add(a, b int) int {\n\tif a == 2 && b == 3 {\n\t\treturn 5\n\t}\n\treturn a - b\n}\n' > calc.go; fi; ` +
		`echo TASK_COMPLETE`
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	must(t, err)
	sharedCache := strings.TrimSpace(string(out))
	must(t, e.svc.Agents.CreateAgent(ctx, models.System, &models.Agent{Name: "coder", Kind: models.KindWorker, Roles: []string{"coder"},
		Command: worker, Workdir: project, Sandbox: models.AgentSandbox{Write: []string{sharedCache}}}, ""))
	// One warm Go build cache: the agent's own would start cold.
	cacheDir := filepath.Join(work, "agents", "coder", "home", ".cache")
	must(t, os.MkdirAll(cacheDir, 0o750))
	must(t, os.Symlink(sharedCache, filepath.Join(cacheDir, "go-build")))

	tk, err := e.svc.Tasks.CreateTask(ctx, e.agents["lead"], models.TaskSpec{Title: "Make Add add", Brief: "Add must add.", Role: "coder", Assignee: "coder",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 2},
			Verification: contract.Verification{Type: contract.VerifyAuto, HeldOut: []contract.HeldOutTest{hiddenTest}}}})
	must(t, err)

	ws, err := workspace.New(work)
	must(t, err)
	pool, err := runner.New(runner.Config{Service: e.svc, Workspaces: ws, RunnerID: "e2e", APIURL: e.srv.URL, Sandbox: sb,
		Lease: 5 * time.Second, Poll: 200 * time.Millisecond, Grace: 2 * time.Second, KillGrace: 200 * time.Millisecond, Log: handlertest.DiscardLog()})
	must(t, err)
	must(t, pool.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = pool.Stop(sctx)
	})
	deadline := time.Now().Add(4 * time.Minute)
	for s := e.state(tk.ID); s != models.TaskVerified; s = e.state(tk.ID) {
		if s == models.TaskBlocked || time.Now().After(deadline) {
			atts, _ := db.ListAttempts(ctx, tk.ID)
			t.Fatalf("task %s, want verified; attempts: %+v", s, atts)
		}
		time.Sleep(200 * time.Millisecond)
	}
	atts, err := db.ListAttempts(ctx, tk.ID)
	must(t, err)
	if len(atts) != 2 || atts[0].Outcome != models.OutcomeFailed || atts[0].Stage != models.StageVerify || atts[1].Outcome != models.OutcomePassed {
		t.Fatalf("attempts: %+v", atts)
	}
	first := atts[0]

	checkWorkerHearsNoSecret(t, ws, tk, first)
	checkWhoSeesHeldOut(t, e, tk, first)
}

// checkWorkerHearsNoSecret checks that what reaches the worker (the attempt-2 brief,
// the diagnosis, the checks and the criteria) says a held-out test failed but carries
// nothing of it.
func checkWorkerHearsNoSecret(t *testing.T, ws *workspace.Manager, tk *models.Task, first models.Attempt) {
	t.Helper()
	// What reaches the worker: the brief on disk, and the attempt it revises.
	brief, err := os.ReadFile((&workspace.Workspace{MetaDir: filepath.Join(ws.Root(), "meta", strconv.FormatInt(tk.ID, 10))}).BriefPath(2))
	must(t, err)
	if !strings.Contains(string(brief), "1 held-out test(s) failed (their names and inputs are withheld)") {
		t.Errorf("the attempt-2 brief does not say a held-out test failed:\n%s", brief)
	}
	t.Logf("the attempt-2 brief:\n%s", brief)
	workerFacing := map[string]string{"the attempt-2 brief": string(brief), "the diagnosis": first.Diagnosis}
	for _, c := range first.Checks {
		workerFacing["check "+c.Stage] = c.Diagnosis
	}
	for _, c := range first.Criteria {
		workerFacing["criterion "+c.Activity] = c.Error
	}
	for where, text := range workerFacing {
		for _, secret := range hiddenSecrets {
			if strings.Contains(text, secret) {
				t.Errorf("%s carries %q of the held-out test:\n%s", where, secret, text)
			}
		}
	}
}

// checkWhoSeesHeldOut checks that the lead sees everything of the failed held-out
// test, and the worker's token and a developer nothing.
func checkWhoSeesHeldOut(t *testing.T, e *env, tk *models.Task, first models.Attempt) {
	t.Helper()
	// What people see: the lead everything, the worker's token and a developer not.
	ho := first.Judge.HeldOut
	const failed = "calc.TestAddLargeNumbers: calc_hidden_test.go:7: Add(1000, 234) = 766, want 1234"
	if ho == nil || ho.FailedCount != 1 || len(ho.Failed) != 1 || ho.Failed[0] != failed || !strings.Contains(ho.Detail, "--- FAIL: TestAddLargeNumbers") {
		t.Fatalf("the stored held-out report %+v", ho)
	}
	path := "/tasks/" + itoa64(tk.ID)
	lead := e.browser().login("lead").get(path)
	for _, want := range []string{failed, `data-testid="judge-held-out-detail"`, "--- FAIL: TestAddLargeNumbers"} {
		if !strings.Contains(lead.Body, want) {
			t.Errorf("the lead's task page lacks %q", want)
		}
	}
	status, raw := handlertest.Request(t, "GET", e.srv.URL+"/api/v1"+path, e.tokens["lead"], "", nil)
	if status != http.StatusOK || !strings.Contains(string(raw), failed) {
		t.Errorf("the lead's API: %d %s", status, raw)
	}
	dev := e.browser().login("dev").get(path)
	_, botRaw := handlertest.Request(t, "GET", e.srv.URL+"/api/v1"+path, e.tokens["bot"], "", nil)
	coderToken := handlertest.CreateToken(t, e.svc, "coder", "test")
	_, coderRaw := handlertest.Request(t, "GET", e.srv.URL+"/api/v1"+path, coderToken, "", nil)
	for who, text := range map[string]string{"a developer's task page": dev.Body, "a worker's API": string(botRaw), "the coder's own API": string(coderRaw)} {
		if !strings.Contains(text, "held") {
			t.Errorf("%s does not show the task: %.300s", who, text)
		}
		for _, secret := range []string{"TestAddLargeNumbers", "calc_hidden", "Add(1000, 234)"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %q of the held-out test", who, secret)
			}
		}
	}
}
