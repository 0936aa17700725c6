package checks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

func wantVerdict(t *testing.T, r models.CheckResult, stage, verdict string, diagContains ...string) {
	t.Helper()
	if r.Stage != stage {
		t.Errorf("stage = %q, want %q", r.Stage, stage)
	}
	if r.Verdict != verdict {
		t.Errorf("verdict = %q, want %q (diagnosis %q)", r.Verdict, verdict, r.Diagnosis)
	}
	for _, s := range diagContains {
		if !strings.Contains(r.Diagnosis, s) {
			t.Errorf("diagnosis %q does not contain %q", r.Diagnosis, s)
		}
	}
	if r.DurationMS < 0 {
		t.Errorf("negative duration %d", r.DurationMS)
	}
}

// noServerPath fails when r's diagnosis names the directory dir (the workspace the
// caller resolved the path in): diagnoses name files relative to the workspace.
func noServerPath(t *testing.T, r models.CheckResult, dir string) {
	t.Helper()
	if strings.Contains(r.Diagnosis, dir) {
		t.Errorf("diagnosis names the server path %s: %q", dir, r.Diagnosis)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute:                 "30m",
		90 * time.Second:                 "1m30s",
		time.Hour:                        "1h",
		time.Hour + 30*time.Minute:       "1h30m",
		1500 * time.Millisecond:          "1.5s",
		0:                                "0s",
		250 * time.Millisecond:           "250ms",
		2*time.Hour + 5*time.Second:      "2h0m5s",
		10*time.Minute + 30*time.Second:  "10m30s",
		time.Minute + 1*time.Millisecond: "1m0.001s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestProcess(t *testing.T) {
	wantVerdict(t, Process(0, false, time.Minute), models.StageProcess, models.VerdictPass)
	r := Process(3, false, time.Minute)
	wantVerdict(t, r, models.StageProcess, models.VerdictFail, "worker exited with status 3")
	r = Process(-1, true, 30*time.Minute)
	wantVerdict(t, r, models.StageProcess, models.VerdictFail, "worker timed out after 30m")
	r = Process(-1, false, time.Minute)
	wantVerdict(t, r, models.StageProcess, models.VerdictFail, "killed by a signal")
	if !Passed(Process(0, false, 0)) || Passed(r) {
		t.Error("Passed disagrees with the verdicts")
	}
}

func TestContradiction(t *testing.T) {
	t.Run("claim and admission", func(t *testing.T) {
		out := "Working on it\nThe migration step Requires   MANUAL approval by ops.\nTASK_COMPLETE\n"
		r := Contradiction(out, []string{"TASK_COMPLETE"}, nil)
		wantVerdict(t, r, models.StageContradiction, models.VerdictFail,
			`"TASK_COMPLETE"`, `"requires manual"`, "line 2",
			`"The migration step Requires   MANUAL approval by ops."`)
	})
	t.Run("every default phrase", func(t *testing.T) {
		for _, p := range DefaultContradictionPhrases {
			out := "done. Note: this " + strings.ToUpper(p) + " step"
			r := Contradiction(out, nil, nil)
			wantVerdict(t, r, models.StageContradiction, models.VerdictFail, `"`+p+`"`, "line 1", `"done"`)
		}
	})
	t.Run("the stage is named once", func(t *testing.T) {
		// The stage is the diagnosis's code prefix wherever it is shown: the
		// diagnosis itself does not start with it, and StageText adds it once.
		r := Contradiction("TASK_COMPLETE\nthis needs human review", nil, nil)
		if strings.HasPrefix(strings.ToLower(r.Diagnosis), models.StageContradiction) {
			t.Errorf("diagnosis starts with its stage: %q", r.Diagnosis)
		}
		if got := models.StageText(r.Stage, r.Diagnosis); strings.Count(got, "contradiction:") != 1 {
			t.Errorf("StageText = %q, want the prefix once", got)
		}
	})
	t.Run("admission without claim passes", func(t *testing.T) {
		r := Contradiction("I could not complete the task.", []string{"TASK_COMPLETE"}, nil)
		wantVerdict(t, r, models.StageContradiction, models.VerdictPass)
	})
	t.Run("claim without admission passes", func(t *testing.T) {
		r := Contradiction("All tests pass.\nTASK_COMPLETE", ClaimTokens("TASK_COMPLETE"), nil)
		wantVerdict(t, r, models.StageContradiction, models.VerdictPass)
	})
	t.Run("done is a whole word", func(t *testing.T) {
		r := Contradiction("the abandoned branch needs human eyes", nil, nil)
		wantVerdict(t, r, models.StageContradiction, models.VerdictPass)
		r = Contradiction("Done! (the deploy needs human sign-off)", nil, nil)
		wantVerdict(t, r, models.StageContradiction, models.VerdictFail, `"needs human"`)
	})
	t.Run("claim is case-insensitive", func(t *testing.T) {
		r := Contradiction("task_complete\nmanual intervention was needed", []string{"TASK_COMPLETE"}, nil)
		wantVerdict(t, r, models.StageContradiction, models.VerdictFail, "line 2", `"manual intervention"`)
	})
	t.Run("custom phrases replace the defaults", func(t *testing.T) {
		r := Contradiction("ALL_DONE but I gave up on the tests", []string{"ALL_DONE"}, []string{"Gave Up"})
		wantVerdict(t, r, models.StageContradiction, models.VerdictFail, `"gave up"`, `"ALL_DONE"`)
		r = Contradiction("ALL_DONE but this requires manual work", []string{"ALL_DONE"}, []string{"gave up"})
		wantVerdict(t, r, models.StageContradiction, models.VerdictPass)
	})
	t.Run("long line is shortened", func(t *testing.T) {
		out := "done\n" + strings.Repeat("x", 500) + " could not complete " + strings.Repeat("y", 500)
		r := Contradiction(out, nil, nil)
		wantVerdict(t, r, models.StageContradiction, models.VerdictFail, "…", "line 2")
		if len(r.Diagnosis) > 600 {
			t.Errorf("diagnosis not bounded: %d bytes", len(r.Diagnosis))
		}
	})
}

func TestClaimTokens(t *testing.T) {
	got := ClaimTokens("ALL_DONE")
	if got[len(got)-1] != "ALL_DONE" || len(got) != len(DefaultClaimTokens)+1 {
		t.Errorf("ClaimTokens(ALL_DONE) = %v", got)
	}
	if got := ClaimTokens("task_complete"); len(got) != len(DefaultClaimTokens) {
		t.Errorf("duplicate token added: %v", got)
	}
	if got := ClaimTokens(" "); len(got) != len(DefaultClaimTokens) {
		t.Errorf("blank token added: %v", got)
	}
	got[0] = "changed"
	if DefaultClaimTokens[0] == "changed" {
		t.Error("ClaimTokens aliases DefaultClaimTokens")
	}
}

func TestDoneToken(t *testing.T) {
	wantVerdict(t, DoneToken("anything", ""), models.StageDoneToken, models.VerdictSkipped)
	wantVerdict(t, DoneToken("work work\nTASK_COMPLETE\n", "TASK_COMPLETE"), models.StageDoneToken, models.VerdictPass)
	wantVerdict(t, DoneToken("status: TASK_COMPLETE.", "TASK_COMPLETE"), models.StageDoneToken, models.VerdictPass)
	r := DoneToken("I think it is finished", "TASK_COMPLETE")
	wantVerdict(t, r, models.StageDoneToken, models.VerdictFail, `done token "TASK_COMPLETE" not found`, "(22 bytes)")
	wantVerdict(t, DoneToken("TASK_COMPLETED", "TASK_COMPLETE"), models.StageDoneToken, models.VerdictFail)
	wantVerdict(t, DoneToken("task_complete", "TASK_COMPLETE"), models.StageDoneToken, models.VerdictFail)
}

func TestIndexToken(t *testing.T) {
	cases := []struct {
		s, tok string
		want   int
	}{
		{"done", "done", 0},
		{"abandoned done", "done", 10},
		{"abandoned", "done", -1},
		{"<done>", "<done>", 0},
		{"x<done>y", "<done>", 1},
		{"", "x", -1},
		{"x", "", -1},
		{"é done", "done", 3},
		{"édone", "done", -1},
	}
	for _, c := range cases {
		if got := indexToken(c.s, c.tok); got != c.want {
			t.Errorf("indexToken(%q, %q) = %d, want %d", c.s, c.tok, got, c.want)
		}
	}
}

func TestMechanicalFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.md")
	c := contract.Completion{Type: contract.CompletionFile, Path: "feature/7/out.md", MinLength: 100}

	r := Mechanical(c, path, nil)
	wantVerdict(t, r, models.StageMechanical, models.VerdictFail, "output file missing at feature/7/out.md")
	noServerPath(t, r, dir)

	write(t, path, "")
	r = Mechanical(c, path, nil)
	wantVerdict(t, r, models.StageMechanical, models.VerdictFail, "is empty", "at least 100 bytes")

	write(t, path, " \n\t\n")
	r = Mechanical(c, path, nil)
	wantVerdict(t, r, models.StageMechanical, models.VerdictFail, "contains only whitespace (4 bytes)")

	write(t, path, strings.Repeat("a", 42))
	r = Mechanical(c, path, nil)
	wantVerdict(t, r, models.StageMechanical, models.VerdictFail,
		"output file feature/7/out.md is 42 bytes long; the contract requires at least 100 bytes")
	noServerPath(t, r, dir)

	write(t, path, strings.Repeat("a", 100))
	wantVerdict(t, Mechanical(c, path, nil), models.StageMechanical, models.VerdictPass)

	c.MinLength = 0
	write(t, path, "x")
	wantVerdict(t, Mechanical(c, path, nil), models.StageMechanical, models.VerdictPass)

	r = Mechanical(c, dir, nil)
	wantVerdict(t, r, models.StageMechanical, models.VerdictFail, "is a directory")

	// An empty type with a path is a file contract.
	c.Type = ""
	r = Mechanical(c, filepath.Join(dir, "nope"), nil)
	wantVerdict(t, r, models.StageMechanical, models.VerdictFail, "missing")

	// The absolute path alone when the contract names none.
	c = contract.Completion{Type: contract.CompletionFile}
	r = Mechanical(c, filepath.Join(dir, "nope"), nil)
	wantVerdict(t, r, models.StageMechanical, models.VerdictFail, "output file missing at "+filepath.Join(dir, "nope"))
}

func TestMechanicalReadErrors(t *testing.T) {
	c := contract.Completion{Type: contract.CompletionFile, Path: "o.md"}
	perm := func(string) ([]byte, error) { return nil, os.ErrPermission }
	wantVerdict(t, Mechanical(c, "/ws/o.md", perm), models.StageMechanical, models.VerdictFail, "permission denied")
	io := func(string) ([]byte, error) { return nil, errors.New("input/output error") }
	wantVerdict(t, Mechanical(c, "/ws/o.md", io), models.StageMechanical, models.VerdictError, "input/output error")
}

func TestMechanicalSignal(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "signal.json")
	c := contract.Completion{Type: contract.CompletionSignal, Path: "signal.json", Signal: "approved"}

	r := Mechanical(c, path, nil)
	wantVerdict(t, r, models.StageMechanical, models.VerdictFail, "signal file missing at signal.json", `{"signal": "approved"}`)

	cases := []struct {
		content, verdict string
		diag             []string
	}{
		{`{"signal": "approved", "reasoning": "fine"}`, models.VerdictPass, nil},
		{`{"signal": "rejected"}`, models.VerdictFail, []string{`signal "rejected" but "approved" required`}},
		{`{"signal": "Approved"}`, models.VerdictFail, []string{`signal "Approved" but "approved" required`}},
		{`{"verdict": "approved"}`, models.VerdictFail, []string{`has no "signal" field; "approved" required`}},
		{`{"signal": true}`, models.VerdictFail, []string{`"signal" field in signal.json`, "is \"true\", not a string"}},
		{`{"signal": "approved",}`, models.VerdictFail, []string{"is not valid JSON", "at offset 23"}},
		{`["approved"]`, models.VerdictFail, []string{"holds a JSON array", "object"}},
		{`null`, models.VerdictFail, []string{"holds null"}},
		{``, models.VerdictFail, []string{"signal file signal.json is empty"}},
		{`{"signal": "approved"} trailing`, models.VerdictFail, []string{"is not valid JSON", "offset"}},
	}
	for _, tc := range cases {
		write(t, path, tc.content)
		wantVerdict(t, Mechanical(c, path, nil), models.StageMechanical, tc.verdict, tc.diag...)
	}
}

func TestMechanicalContractProblems(t *testing.T) {
	wantVerdict(t, Mechanical(contract.Completion{Type: contract.CompletionNone}, "", nil), models.StageMechanical, models.VerdictPass)
	wantVerdict(t, Mechanical(contract.Completion{}, "", nil), models.StageMechanical, models.VerdictPass)
	wantVerdict(t, Mechanical(contract.Completion{Type: "mystery"}, "/x", nil), models.StageMechanical, models.VerdictError, `unknown completion type "mystery"`)
	wantVerdict(t, Mechanical(contract.Completion{Type: contract.CompletionSignal, Path: "s.json"}, "/x", nil), models.StageMechanical, models.VerdictError, "names no signal value")
	wantVerdict(t, Mechanical(contract.Completion{Type: contract.CompletionFile, Path: "o.md"}, "", nil), models.StageMechanical, models.VerdictError, "no output path")
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFormatTail(t *testing.T) {
	if got := formatTail([]byte("hello "), 6); got != "hello " {
		t.Errorf("got %q", got)
	}
	if got := formatTail([]byte("and more"), 21); got != "[… 13 earlier bytes omitted]\nand more" {
		t.Errorf("got %q", got)
	}
	// A cut inside a multi-byte rune does not start the tail with a broken rune, and
	// the dropped fragment counts as omitted.
	tail := []byte("xxé€")[3:] // the second byte of é, then €
	if got := formatTail(tail, 7); got != "[… 4 earlier bytes omitted]\n€" {
		t.Errorf("got %q", got)
	}
	if got := formatTail(nil, 0); got != "" {
		t.Errorf("got %q", got)
	}
}
