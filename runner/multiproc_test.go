package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner/ledger"
)

var (
	binDir   string
	binOnce  sync.Once
	binPath  string
	binError error
)

// TestMain owns the temporary directory the countersign binary is built into (once,
// by the first test that needs it).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "countersign-runner-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// countersignBinary builds ./cmd/countersign once per test run.
func countersignBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(binDir, "countersign")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/countersign")
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		if err != nil {
			binError = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binError != nil {
		t.Fatal(binError)
	}
	return binPath
}

// scriptSandbox lets a worker confined by `countersign runner` run the test scripts
// and append to the shared record file, as an admin would grant with --sandbox-read
// and --sandbox-write.
func scriptSandbox(t *testing.T, shared string) models.AgentSandbox {
	t.Helper()
	testdata, err := filepath.Abs("testdata")
	must(t, err)
	return models.AgentSandbox{Read: []string{testdata}, Write: []string{filepath.Dir(shared)}}
}

// runnerProc is a `countersign runner` process.
type runnerProc struct {
	cmd *exec.Cmd
	log string
}

func startRunnerProc(t *testing.T, url, id string, extra ...string) *runnerProc {
	t.Helper()
	return startRunnerIn(t, url, id, t.TempDir(), extra...)
}

// startRunnerIn starts a runner with data dir dir: a runner restarted in the same
// dir reaps what its dead predecessor left and appends to the same log.
func startRunnerIn(t *testing.T, url, id, dir string, extra ...string) *runnerProc {
	t.Helper()
	args := append([]string{"runner", "--database-url", url, "--data-dir", dir, "--runner-id", id,
		"--poll", "300ms", "--grace", "2s", "--evaluator", "none", "--log-level", "warn"}, extra...)
	cmd := exec.Command(countersignBinary(t), args...)
	logPath := filepath.Join(dir, "runner.log")
	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	must(t, err)
	cmd.Stdout, cmd.Stderr = f, f
	must(t, cmd.Start())
	f.Close()
	rp := &runnerProc{cmd: cmd, log: logPath}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-done
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("runner %s log:\n%s", id, b)
		}
	})
	return rp
}

// stop ends the process with SIGTERM (graceful) and waits.
func (r *runnerProc) stop(t *testing.T) {
	t.Helper()
	must(t, r.cmd.Process.Signal(syscall.SIGTERM))
	if err := r.cmd.Wait(); err != nil {
		b, _ := os.ReadFile(r.log)
		t.Fatalf("runner exited with %v:\n%s", err, b)
	}
}

// pgService opens a fresh PostgreSQL database with a boss and empty project rules.
func pgService(t *testing.T) (string, *store.DB, *models.Service, *models.Agent, context.Context) {
	t.Helper()
	url := storetest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	db, err := store.Open(ctx, store.Config{DatabaseURL: url})
	must(t, err)
	t.Cleanup(func() { db.Close() })
	svc := models.NewService(db, ledger.Composer{})
	boss := &models.Agent{Name: "boss", Kind: models.KindHuman, Roles: []string{models.RoleAdmin, models.RoleLead, models.RoleExec}}
	must(t, svc.Agents.CreateAgent(ctx, models.System, boss, ""))
	must(t, svc.Templates.SaveRules(ctx, boss, &models.ProjectRules{Rules: contract.Rules{Activities: map[string]string{"unit-test": "true"}}}))
	return url, db, svc, boss, ctx
}

// readRuns reads the "<task id> <attempt>" lines workers appended.
func readRuns(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	runs := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		runs[strings.TrimSpace(sc.Text())]++
	}
	must(t, sc.Err())
	return runs
}

// TestTwoRunnerProcessesShareWork: two `countersign runner` processes on one
// PostgreSQL run 500 tasks; every task runs exactly once per attempt and none is lost.
func TestTwoRunnerProcessesShareWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs 500 tasks")
	}
	url, db, svc, boss, ctx := pgService(t)
	shared := filepath.Join(t.TempDir(), "runs.txt")
	for i := range 4 {
		a := &models.Agent{Name: fmt.Sprintf("w%d", i), Kind: models.KindWorker, Roles: []string{"developer"},
			Command: script(t, "record.sh", shared), Concurrency: 8, Sandbox: scriptSandbox(t, shared)}
		must(t, svc.Agents.CreateAgent(ctx, boss, a, ""))
	}
	const n = 500
	for i := range n {
		_, err := svc.Tasks.CreateTask(ctx, boss, models.TaskSpec{Title: fmt.Sprintf("task %d", i), Role: "developer", Contract: noneContract()})
		must(t, err)
	}
	start := time.Now()
	a := startRunnerProc(t, url, "runner-a")
	b := startRunnerProc(t, url, "runner-b")
	deadline := time.Now().Add(4 * time.Minute)
	for {
		counts, err := db.CountTasks(ctx, 0)
		must(t, err)
		if counts[models.TaskVerified] == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not all verified: %v", counts)
		}
		time.Sleep(200 * time.Millisecond)
	}
	took := time.Since(start)
	a.stop(t)
	b.stop(t)

	runs := readRuns(t, shared)
	if len(runs) != n {
		t.Errorf("%d distinct (task, attempt) runs, want %d", len(runs), n)
	}
	for k, c := range runs {
		if c != 1 || !strings.HasSuffix(k, " 1") {
			t.Errorf("run %q happened %d times", k, c)
		}
	}
	byRunner := map[string]int{}
	tasks, err := db.ListTasks(ctx, models.TaskFilter{Limit: 1000})
	must(t, err)
	for _, tk := range tasks {
		atts, err := db.ListAttempts(ctx, tk.ID)
		must(t, err)
		if len(atts) != 1 || atts[0].Outcome != models.OutcomePassed {
			t.Fatalf("task %d attempts %+v", tk.ID, atts)
		}
		byRunner[atts[0].RunnerID]++
	}
	if byRunner["runner-a"] == 0 || byRunner["runner-b"] == 0 {
		t.Errorf("work was not shared: %v", byRunner)
	}
	t.Logf("500 tasks in %v (%.0f tasks/s), by runner %v", took.Round(time.Millisecond), n/took.Seconds(), byRunner)
}

// TestKilledRunnerIsTakenOver: kill -9 of a runner mid-task; the other runner takes
// the task over once the lease expires, without using an attempt.
func TestKilledRunnerIsTakenOver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	url, db, svc, boss, ctx := pgService(t)
	shared := filepath.Join(t.TempDir(), "runs.txt")
	must(t, svc.Agents.CreateAgent(ctx, boss, &models.Agent{Name: "dev", Kind: models.KindWorker, Roles: []string{"developer"},
		Command: script(t, "sleeper.sh", "3", shared), Sandbox: scriptSandbox(t, shared)}, ""))
	a := startRunnerProc(t, url, "runner-a", "--lease", "2s")
	task, err := svc.Tasks.CreateTask(ctx, boss, models.TaskSpec{Title: "long", Role: "developer", Contract: noneContract()})
	must(t, err)
	deadline := time.Now().Add(time.Minute)
	for {
		atts, err := db.ListAttempts(ctx, task.ID)
		must(t, err)
		if len(atts) == 1 && atts[0].Outcome == models.OutcomeRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("runner A never started the task")
		}
		time.Sleep(20 * time.Millisecond)
	}
	startRunnerProc(t, url, "runner-b", "--lease", "2s")
	must(t, a.cmd.Process.Signal(syscall.SIGKILL))
	a.cmd.Wait()
	killed := time.Now()

	for {
		got, err := db.GetTask(ctx, task.ID)
		must(t, err)
		if got.State == models.TaskVerified {
			if got.AttemptsUsed != 0 {
				t.Errorf("takeover used %d attempts", got.AttemptsUsed)
			}
			break
		}
		if time.Since(killed) > time.Minute {
			t.Fatalf("task is %s a minute after the kill", got.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
	atts, err := db.ListAttempts(ctx, task.ID)
	must(t, err)
	if len(atts) != 2 || atts[0].Outcome != models.OutcomeInfra || atts[0].RunnerID != "runner-a" ||
		!strings.Contains(atts[0].Diagnosis, "stopped renewing its lease") || atts[1].Outcome != models.OutcomePassed || atts[1].RunnerID != "runner-b" {
		t.Fatalf("attempts %+v", atts)
	}
	if wait := atts[1].StartedAt.Sub(killed); wait > 5*time.Second {
		t.Errorf("takeover took %v after the kill (lease 2s)", wait)
	}
	if runs := readRuns(t, shared); runs[fmt.Sprintf("%d 2", task.ID)] != 1 {
		t.Errorf("runs %v", runs)
	}
}
