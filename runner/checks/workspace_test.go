package checks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
)

// gitRepo makes a real repository with one commit in a temp dir.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("git is required")
		}
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	write(t, filepath.Join(dir, "README.md"), "hello\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "init")
	return dir
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestWorkspaceSkipped(t *testing.T) {
	wantVerdict(t, Workspace(t.Context(), t.TempDir(), false, nil, nil, nil), models.StageWorkspace, models.VerdictSkipped)
}

func TestWorkspaceClean(t *testing.T) {
	dir := gitRepo(t)
	wantVerdict(t, Workspace(t.Context(), dir, true, nil, nil, nil), models.StageWorkspace, models.VerdictPass)

	write(t, filepath.Join(dir, "README.md"), "changed\n")
	write(t, filepath.Join(dir, "new.go"), "package x\n")
	r := Workspace(t.Context(), dir, true, nil, nil, nil)
	wantVerdict(t, r, models.StageWorkspace, models.VerdictFail, "2 uncommitted change(s)", " M README.md", "?? new.go")

	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "work")
	wantVerdict(t, Workspace(t.Context(), dir, true, nil, nil, nil), models.StageWorkspace, models.VerdictPass)
}

func TestWorkspaceCleanListsAtMostTen(t *testing.T) {
	dir := gitRepo(t)
	for i := 0; i < 13; i++ {
		write(t, filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), "x")
	}
	r := Workspace(t.Context(), dir, true, nil, nil, nil)
	wantVerdict(t, r, models.StageWorkspace, models.VerdictFail, "13 uncommitted change(s)", "?? f00.txt", "?? f09.txt", "… and 3 more")
	if strings.Contains(r.Diagnosis, "f10.txt") {
		t.Errorf("diagnosis lists more than ten: %q", r.Diagnosis)
	}
}

func TestWorkspaceNotARepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	r := Workspace(t.Context(), dir, true, nil, nil, nil)
	wantVerdict(t, r, models.StageWorkspace, models.VerdictError, "git status failed in "+dir, "not a git repository")
}

func TestWorkspaceChecklist(t *testing.T) {
	dir := t.TempDir()
	cl := &contract.Checklist{Path: "tasks.md", Count: 3}

	r := Workspace(t.Context(), dir, false, cl, nil, nil)
	wantVerdict(t, r, models.StageWorkspace, models.VerdictFail, "checklist file tasks.md is missing", "at least 3 checked boxes")

	write(t, filepath.Join(dir, "tasks.md"), strings.Join([]string{
		"# Tasks",
		"- [x] 1.1 first",
		"* [X] 1.2 second",
		"- [ ] 1.3 third",
		"text mentioning - [x] inline",
		"",
	}, "\n"))
	r = Workspace(t.Context(), dir, false, cl, nil, nil)
	wantVerdict(t, r, models.StageWorkspace, models.VerdictFail,
		`checklist tasks.md has 2 checked box(es) ("- [x]"); the contract requires at least 3`)

	write(t, filepath.Join(dir, "tasks.md"), "- [x] a\n* [X] b\n  - [x] nested c\n+ [x] d\n")
	wantVerdict(t, Workspace(t.Context(), dir, false, cl, nil, nil), models.StageWorkspace, models.VerdictPass)

	// Outside the workspace is refused by the default resolver.
	r = Workspace(t.Context(), dir, false, &contract.Checklist{Path: "../tasks.md", Count: 1}, nil, nil)
	wantVerdict(t, r, models.StageWorkspace, models.VerdictError, `checklist path "../tasks.md" cannot be resolved`)

	// A custom resolver is used as given.
	other := t.TempDir()
	write(t, filepath.Join(other, "list.md"), "- [x] one\n")
	resolve := func(p string) (string, error) { return filepath.Join(other, p), nil }
	wantVerdict(t, Workspace(t.Context(), dir, false, &contract.Checklist{Path: "list.md", Count: 1}, resolve, nil), models.StageWorkspace, models.VerdictPass)
}

func TestWorkspaceCleanThenChecklist(t *testing.T) {
	dir := gitRepo(t)
	write(t, filepath.Join(dir, "tasks.md"), "- [x] a\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "list")
	cl := &contract.Checklist{Path: "tasks.md", Count: 2}
	r := Workspace(t.Context(), dir, true, cl, nil, nil)
	wantVerdict(t, r, models.StageWorkspace, models.VerdictFail, "has 1 checked box(es)")

	write(t, filepath.Join(dir, "tasks.md"), "- [x] a\n- [x] b\n")
	r = Workspace(t.Context(), dir, true, cl, nil, nil)
	wantVerdict(t, r, models.StageWorkspace, models.VerdictFail, "1 uncommitted change(s)", "M tasks.md")
}

func TestWorkspaceGitIgnoresTheRunnersGitVariables(t *testing.T) {
	// The runner may itself run under git (a hook, a CI job) with GIT_DIR set; git
	// status must look at the workspace, not where that points.
	dir := gitRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "elsewhere"))
	wantVerdict(t, Workspace(t.Context(), dir, true, nil, nil, nil), models.StageWorkspace, models.VerdictPass)
}

func TestWorkspaceCancelledIsInfrastructure(t *testing.T) {
	dir := gitRepo(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := Workspace(ctx, dir, true, nil, nil, nil)
	wantVerdict(t, r, models.StageWorkspace, models.VerdictError, "git status failed in "+dir, "context canceled")
}
