package checks

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/internal/proctest"
)

func TestVerifyAllPass(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "marker"), "ok")
	criteria := []contract.Criterion{
		{Activity: "unit-test", Description: "tests", Command: "test -f marker"},
		{Activity: "typecheck", Description: "types"},
	}
	rules := map[string]string{"typecheck": "echo typecheck ok"}
	r, crs := Verify(t.Context(), dir, []string{"true", "echo hi"}, criteria, rules, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictPass)
	if len(crs) != 4 {
		t.Fatalf("got %d criterion results", len(crs))
	}
	want := []struct{ activity, command string }{
		{VerifyActivity, "true"}, {VerifyActivity, "echo hi"}, {"unit-test", "test -f marker"}, {"typecheck", "echo typecheck ok"},
	}
	for i, cr := range crs {
		if cr.Activity != want[i].activity || cr.Command != want[i].command || cr.Status != models.VerdictPass || cr.Attempts != 1 || cr.Error != "" {
			t.Errorf("result %d = %+v", i, cr)
		}
	}
}

func TestVerifyFailStopsAndSkipsTheRest(t *testing.T) {
	dir := t.TempDir()
	criteria := []contract.Criterion{
		{Activity: "unit-test", Description: "Toggle renders", Command: "echo FAIL: TestToggle >&2; exit 3"},
		{Activity: "lint", Command: "touch ran-lint"},
		{Activity: "e2e"}, // no command
	}
	r, crs := Verify(t.Context(), dir, []string{"true"}, criteria, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictFail,
		`criterion unit-test ("Toggle renders"): command "echo FAIL: TestToggle >&2; exit 3" exited with status 3 after`,
		"last output:\nFAIL: TestToggle", "(2 later verification command(s) not run)")
	if crs[0].Status != models.VerdictPass {
		t.Errorf("first = %+v", crs[0])
	}
	if crs[1].Status != models.VerdictFail || crs[1].Attempts != 1 || !strings.Contains(crs[1].Error, "exited with status 3") || !strings.Contains(crs[1].Error, "FAIL: TestToggle") {
		t.Errorf("failing = %+v", crs[1])
	}
	for _, cr := range crs[2:] {
		if cr.Status != models.VerdictSkipped || cr.Attempts != 0 || !strings.Contains(cr.Error, "not run") {
			t.Errorf("after failure = %+v", cr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran-lint")); err == nil {
		t.Error("a command after the failure ran")
	}
}

func TestVerifyCommandDiagnosis(t *testing.T) {
	r, crs := Verify(t.Context(), t.TempDir(), []string{"exit 1"}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictFail, `verify command "exit 1" exited with status 1`, "(no output)")
	if strings.Contains(r.Diagnosis, "later verification") {
		t.Errorf("diagnosis mentions later commands: %q", r.Diagnosis)
	}
	if !strings.HasPrefix(crs[0].Error, "exited with status 1 after") || !strings.HasSuffix(crs[0].Error, ": (no output)") {
		t.Errorf("error = %q", crs[0].Error)
	}
	// A missing program is the command's failure (status 127), not infrastructure.
	r, _ = Verify(t.Context(), t.TempDir(), []string{"no-such-program-xyz"}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictFail, "exited with status 127", "not found")
}

func TestVerifyOutputTailIsBounded(t *testing.T) {
	// 100 KiB of output, then the line that matters.
	cmd := `i=0; while [ $i -lt 1600 ]; do echo "noise line number $i padded to sixty four bytes........"; i=$((i+1)); done; echo "the real error"; exit 2`
	r, crs := Verify(t.Context(), t.TempDir(), []string{cmd}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictFail, "exited with status 2", "the real error\n", "earlier bytes omitted")
	if len(crs[0].Error) > TailSize+200 {
		t.Errorf("criterion error not bounded: %d bytes", len(crs[0].Error))
	}
	if len(r.Diagnosis) > TailSize+400 {
		t.Errorf("diagnosis not bounded: %d bytes", len(r.Diagnosis))
	}
}

func TestVerifyTimeoutKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	// The shell starts a background grandchild that would touch a file later and keeps
	// the output pipe open; the timeout must kill both and return promptly.
	cmd := `(sleep 3; touch survived) & echo started; sleep 30`
	start := time.Now()
	r, crs := Verify(t.Context(), dir, []string{cmd}, nil, nil, 300*time.Millisecond, nil, nil)
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Verify took %v after a 300ms timeout", took)
	}
	wantVerdict(t, r, models.StageVerify, models.VerdictFail, "timed out after 300ms and was killed", "started")
	if crs[0].Status != models.VerdictFail {
		t.Errorf("result = %+v", crs[0])
	}
	time.Sleep(3500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "survived")); err == nil {
		t.Error("a grandchild outlived the timeout")
	}
}

func TestVerifyBackgroundChildAfterSuccess(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	r, _ := Verify(t.Context(), dir, []string{`(sleep 2; touch survived) & echo ok`}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictPass)
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Errorf("Verify waited %v for a background child", took)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "survived")); err == nil {
		t.Error("a background child outlived its command")
	}
}

func TestVerifyCannotStartIsInfrastructure(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	r, crs := Verify(t.Context(), missing, []string{"true", "true"}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictError, `verify command "true" could not be started`)
	if crs[0].Status != models.VerdictError || crs[1].Status != models.VerdictSkipped {
		t.Errorf("results = %+v", crs)
	}
}

func TestVerifyCancelledContextIsInfrastructure(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	r, _ := Verify(ctx, t.TempDir(), []string{"sleep 20"}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictError, "was interrupted: context canceled")
}

func TestVerifySkippedCriteria(t *testing.T) {
	r, crs := Verify(t.Context(), t.TempDir(), nil, []contract.Criterion{{Activity: "e2e", Description: "browser"}}, map[string]string{"lint": "true"}, 0, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictSkipped, "none of the 1 verification item(s) has a command")
	if crs[0].Status != models.VerdictSkipped || !strings.Contains(crs[0].Error, `activity "e2e"`) {
		t.Errorf("result = %+v", crs[0])
	}
	r, crs = Verify(t.Context(), t.TempDir(), nil, nil, nil, 0, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictSkipped, "no verify commands or criteria")
	if len(crs) != 0 {
		t.Errorf("results = %+v", crs)
	}
	// A criterion without a command does not fail the check when others pass.
	r, crs = Verify(t.Context(), t.TempDir(), []string{" "}, []contract.Criterion{{Activity: "e2e"}, {Activity: "lint"}}, map[string]string{"lint": "true"}, 0, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictPass)
	if crs[0].Error != "empty verify command" || crs[1].Status != models.VerdictSkipped || crs[2].Status != models.VerdictPass {
		t.Errorf("results = %+v", crs)
	}
}

func TestVerifyEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COUNTERSIGN_TEST_SECRET", "s3cret")
	crit := []contract.Criterion{{Activity: "unit-test", Pattern: "Dark$Mode; rm -rf /", Command: `printf '%s|%s|%s|%s' "$COUNTERSIGN_CRITERION_ACTIVITY" "$COUNTERSIGN_CRITERION_PATTERN" "$TASK_ID" "$COUNTERSIGN_TEST_SECRET" > env.txt`}}
	r, _ := Verify(t.Context(), dir, nil, crit, nil, time.Minute, []string{"PATH=" + os.Getenv("PATH"), "TASK_ID=42"}, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictPass)
	got, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "unit-test|Dark$Mode; rm -rf /|42|" {
		t.Errorf("env seen by the command = %q", got)
	}
	// nil env: minimal, without the runner's other variables.
	r, _ = Verify(t.Context(), dir, []string{`test -z "$COUNTERSIGN_TEST_SECRET" && test -n "$PATH"`}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictPass)
}

func TestVerifyKilledBySignal(t *testing.T) {
	r, _ := Verify(t.Context(), t.TempDir(), []string{"kill -TERM $$"}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictFail, "was killed by signal terminated")
}

// termIgnoringChild is shell text that starts a background process ignoring SIGTERM,
// holding the command's output open, and waits until it has written its pid to
// child.pid, so that only SIGKILL to the whole group can end it.
const termIgnoringChild = `sh -c 'trap "" TERM; echo $$ > child.pid.tmp; mv child.pid.tmp child.pid; exec sleep 30' &
while [ ! -f child.pid ]; do sleep 0.01; done; echo started; `

// childPID reads the pid termIgnoringChild wrote.
func childPID(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// wantGone fails when pid outlives its verify command.
func wantGone(t *testing.T, pid int) { proctest.WantGone(t, pid, "its verify command") }

func TestVerifyTimeoutKillsAChildIgnoringSIGTERM(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	r, _ := Verify(t.Context(), dir, []string{termIgnoringChild + "sleep 30"}, nil, nil, 300*time.Millisecond, nil, nil)
	took := time.Since(start)
	wantVerdict(t, r, models.StageVerify, models.VerdictFail, "timed out after 300ms and was killed", "started")
	// SIGTERM ends the shell at once; the child holding the output gets the grace.
	if took < killGrace || took > killGrace+2*time.Second {
		t.Errorf("Verify took %v: want the timeout plus the %v grace", took, killGrace)
	}
	wantGone(t, childPID(t, dir))
}

func TestVerifyBackgroundChildIgnoringSIGTERMAfterSuccess(t *testing.T) {
	// The shell passes; what it left behind holds the output open and shrugs off
	// SIGTERM. The verdict is still the shell's, and the child does not survive.
	dir := t.TempDir()
	start := time.Now()
	r, crs := Verify(t.Context(), dir, []string{termIgnoringChild + "exit 0"}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictPass)
	if crs[0].Status != models.VerdictPass {
		t.Errorf("result = %+v", crs[0])
	}
	if took := time.Since(start); took > killGrace+2*time.Second {
		t.Errorf("Verify took %v", took)
	}
	wantGone(t, childPID(t, dir))
}

func TestVerifyEscapedChildHoldingOutputDoesNotHang(t *testing.T) {
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Skip("setsid(1) not installed")
	}
	// setsid takes the child out of the group, where no group signal reaches it; the
	// command must still finish on the shell's status rather than wait for the pipe.
	dir := t.TempDir()
	cmd := `setsid sh -c 'echo $$ > child.pid.tmp; mv child.pid.tmp child.pid; exec sleep 30' &
while [ ! -f child.pid ]; do sleep 0.01; done; echo done; exit 4`
	start := time.Now()
	r, _ := Verify(t.Context(), dir, []string{cmd}, nil, nil, time.Minute, nil, nil)
	took := time.Since(start)
	_ = syscall.Kill(childPID(t, dir), syscall.SIGKILL)
	wantVerdict(t, r, models.StageVerify, models.VerdictFail, "exited with status 4", "done")
	if took > killGrace+2*time.Second {
		t.Errorf("Verify took %v", took)
	}
}

func TestVerifyDefaultEnvironment(t *testing.T) {
	// nil env is an allow-list: Go's caches get through; the runner's other variables,
	// secrets or not, do not.
	dir := t.TempDir()
	t.Setenv("GOCACHE", "/tmp/countersign-gocache")
	t.Setenv("COUNTERSIGN_TEST_SECRET", "s3cret")
	t.Setenv("TZ", "UTC")
	r, _ := Verify(t.Context(), dir, []string{"env > env.txt"}, nil, nil, time.Minute, nil, nil)
	wantVerdict(t, r, models.StageVerify, models.VerdictPass)
	b, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	env := "\n" + string(b)
	if !strings.Contains(env, "\nGOCACHE=/tmp/countersign-gocache\n") || !strings.Contains(env, "\nPATH=") {
		t.Errorf("environment lacks GOCACHE or PATH:%s", env)
	}
	for _, k := range []string{"COUNTERSIGN_TEST_SECRET", "TZ"} {
		if strings.Contains(env, "\n"+k+"=") {
			t.Errorf("environment has %s:%s", k, env)
		}
	}
}
