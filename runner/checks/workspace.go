package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/worker"
)

// maxListedChanges is how many uncommitted paths a diagnosis names.
const maxListedChanges = 10

// checkedBoxRE matches a checked Markdown task-list item: "- [x]", "* [X]", "+ [x]",
// indented or not.
var checkedBoxRE = regexp.MustCompile(`^\s*[-*+]\s+\[[xX]\]`)

// Workspace checks the state the worker left the workspace in, as the contract asks:
//
//   - clean: `git -C dir status --porcelain` prints nothing; otherwise the check
//     fails, naming up to ten of the uncommitted paths.
//   - checklist: the Markdown file checklist.Path has at least checklist.Count
//     checked boxes ("- [x]", "* [X]").
//
// resolve turns the checklist's workspace-relative path into an absolute one and
// refuses paths outside the workspace; nil means filepath.Join(dir, path) for local
// paths only. Skipped when the contract asks for neither. Git failing to run (not a
// repository, no git) or a path that cannot be resolved is Verdict error.
//
// git runs confined by confine (nil: unconfined): the repository, its config
// included, is the worker's.
func Workspace(ctx context.Context, dir string, clean bool, checklist *contract.Checklist, resolve func(string) (string, error), confine *worker.Confinement) models.CheckResult {
	start := time.Now()
	if !clean && checklist == nil {
		return result(models.StageWorkspace, models.VerdictSkipped, "the contract asks for no workspace checks", start)
	}
	if clean {
		if r := checkClean(ctx, dir, start, confine); !Passed(r) {
			return r
		}
	}
	if checklist != nil {
		if r := checkChecklist(dir, checklist, resolve, start); !Passed(r) {
			return r
		}
	}
	return result(models.StageWorkspace, models.VerdictPass, "", start)
}

// checkClean runs git status and fails on any uncommitted change.
func checkClean(ctx context.Context, dir string, start time.Time, confine *worker.Confinement) models.CheckResult {
	var stdout bytes.Buffer
	res, err := worker.Run(ctx, worker.Spec{
		// No hooks or fsmonitor: the repository is the worker's, and so would be their code.
		Argv: []string{"git", "-C", dir, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "status", "--porcelain"},
		Env: append(worker.Inherit(defaultEnvKeys...), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C",
			"GIT_CONFIG_GLOBAL=/dev/null"), // the runner's HOME is out of a confined git's reach
		ExactEnv:  true,
		Stdout:    &stdout,
		KillGrace: killGrace,
		Confine:   confine,
	})
	var failure string // what went wrong, when git did not report a status
	switch {
	case err != nil:
		failure = startFailure(err)
	case res.Cancelled:
		failure = ctx.Err().Error()
	case res.SignalNum != 0 || res.ExitCode != 0:
		// git explains itself on stderr ("not a git repository"); the status is a fallback.
		if failure = strings.TrimSpace(string(res.Tail)); failure == "" {
			failure = fmt.Sprintf("exit status %d", res.ExitCode)
			if res.SignalNum != 0 {
				failure = "signal: " + res.SignalNum.String()
			}
		}
	}
	if failure != "" {
		return result(models.StageWorkspace, models.VerdictError,
			fmt.Sprintf("git status failed in %s: %s", dir, quoteLine(failure, 400)), start)
	}
	var changes []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.TrimSpace(line) != "" {
			changes = append(changes, strings.TrimRight(line, "\r"))
		}
	}
	if len(changes) == 0 {
		return result(models.StageWorkspace, models.VerdictPass, "", start)
	}
	listed := changes
	if len(listed) > maxListedChanges {
		listed = listed[:maxListedChanges]
	}
	diag := fmt.Sprintf("the workspace has %d uncommitted change(s); commit them (or remove stray files) before finishing:\n  %s",
		len(changes), strings.Join(listed, "\n  "))
	if n := len(changes) - len(listed); n > 0 {
		diag += fmt.Sprintf("\n  … and %d more", n)
	}
	return result(models.StageWorkspace, models.VerdictFail, diag, start)
}

// checkChecklist counts checked boxes in the checklist file.
func checkChecklist(dir string, cl *contract.Checklist, resolve func(string) (string, error), start time.Time) models.CheckResult {
	if resolve == nil {
		resolve = func(p string) (string, error) {
			if !filepath.IsLocal(p) {
				return "", fmt.Errorf("path %q is not inside the workspace", p)
			}
			return filepath.Join(dir, p), nil
		}
	}
	abs, err := resolve(cl.Path)
	if err != nil {
		return result(models.StageWorkspace, models.VerdictError,
			fmt.Sprintf("checklist path %q cannot be resolved: %v", cl.Path, err), start)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		verdict := models.VerdictError
		diag := fmt.Sprintf("reading checklist %s: %v", cl.Path, err)
		if errors.Is(err, fs.ErrNotExist) {
			verdict = models.VerdictFail
			diag = fmt.Sprintf("checklist file %s is missing; it must have at least %d checked boxes (\"- [x]\")", cl.Path, cl.Count)
		}
		return result(models.StageWorkspace, verdict, diag, start)
	}
	checked := 0
	for _, line := range strings.Split(string(data), "\n") {
		if checkedBoxRE.MatchString(line) {
			checked++
		}
	}
	if checked < cl.Count {
		return result(models.StageWorkspace, models.VerdictFail, fmt.Sprintf(
			"checklist %s has %d checked box(es) (\"- [x]\"); the contract requires at least %d: mark each finished item",
			cl.Path, checked, cl.Count), start)
	}
	return result(models.StageWorkspace, models.VerdictPass, "", start)
}
