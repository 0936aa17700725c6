package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/evaluator"
	"github.com/countersign/countersign/runner/worker"
)

// readiness lists what keeps the contract of tr's task from being checked at all as
// things stand, before the first attempt of a round (a new task, one an exec retried
// or reassigned): the workspace exists and the output directory can be written; each
// verify and criterion command's program can be found on the PATH its confined
// process gets, and read and run there; the workspace is a git repository when the
// contract asks for a clean one, and an evaluator is configured when it has
// `evaluate` — each only where the layer that needs it runs (advisory tasks run no
// checks, skip tasks no workspace or evaluation layer). Nothing is
// run: a few stats, so that a task that cannot be judged costs no worker. rules gives
// the project rules (activity commands) when a criterion needs them.
func (p *judging) readiness(tr *taskRun, ar *attemptRun, rules func() (models.ProjectRules, error)) ([]string, error) {
	t := &tr.task
	cp := expandedCompletion(t) // the verify commands the verify layer runs
	var missing []string
	if fi, err := os.Stat(ar.ws.Dir); err != nil || !fi.IsDir() {
		missing = append(missing, fmt.Sprintf("the workspace %s does not exist", ar.ws.Dir))
	}
	if ar.outProblem != "" {
		missing = append(missing, ar.outProblem)
	} else if ar.outAbs != "" {
		if dir := filepath.Dir(ar.outAbs); unix.Access(dir, unix.W_OK|unix.X_OK) != nil {
			missing = append(missing, fmt.Sprintf("the output directory %s cannot be written", dir))
		}
	}
	vt := t.Contract.Verification.Type
	if vt == contract.VerifyAdvisory {
		return missing, nil // no automated checks: a person looks at the output
	}
	var look *toolLookup // made on first use: most contracts need no lookup at all
	needs := func(what, command string, tools ...string) {
		// The command's own first words, and the tools a stack says it runs (gofmt
		// inside `files=$(gofmt -l .)` is no first word).
		progs := append(models.CommandPrograms(command), tools...)
		slices.Sort(progs)
		for _, prog := range slices.Compact(progs) {
			if look == nil {
				look = p.newJudgeToolLookup(tr, ar)
			}
			if why := look.find(prog); why != "" {
				missing = append(missing, fmt.Sprintf("%s needs %s", what, why))
			}
		}
	}
	for _, c := range cp.Verify {
		needs(fmt.Sprintf("verify command %q", strings.TrimSpace(c)), c)
	}
	var activities map[string]string
	for _, c := range t.Contract.Verification.Criteria {
		if c.Timing == contract.TimingDeferred {
			continue
		}
		command := strings.TrimSpace(c.Command)
		if command == "" {
			if activities == nil {
				r, err := rules()
				if err != nil {
					return nil, err
				}
				activities = r.Activities
			}
			command = strings.TrimSpace(activities[c.Activity])
		}
		needs(fmt.Sprintf("criterion %s (command %q)", c.Activity, command), command, c.Tools...)
	}
	if vt == contract.VerifySkip {
		return missing, nil // the workspace and evaluation layers do not run
	}
	if cp.Clean {
		if why := p.newToolLookup(tr, ar).find("git"); why != "" {
			missing = append(missing, "the clean workspace check needs "+why)
		} else if why := p.gitRepo(tr, ar); why != "" {
			missing = append(missing, why)
		}
	}
	if strings.TrimSpace(cp.Evaluate) != "" && !evaluator.Configured(p.cfg.Evaluator) {
		missing = append(missing, "the contract asks for evaluation (evaluate) but no evaluator is configured (--evaluator)")
	}
	return missing, nil
}

// gitRepo says why the workspace is not a git repository a confined git can read, ""
// when it is: the nearest .git at or above it decides, as for git itself.
func (p *judging) gitRepo(tr *taskRun, ar *attemptRun) string {
	for dir := ar.ws.Dir; ; dir = filepath.Dir(dir) {
		gitDir := filepath.Join(dir, ".git")
		if _, err := os.Stat(gitDir); err == nil {
			if readable := p.readablePaths(tr, ar); readable != nil && !under(gitDir, readable) {
				return fmt.Sprintf("the contract asks for a clean workspace (clean), but the git repository of %s (%s) is out of the sandbox's reach", ar.ws.Dir, gitDir)
			}
			return ""
		}
		if dir == filepath.Dir(dir) {
			return fmt.Sprintf("the contract asks for a clean workspace (clean), but %s is not a git repository", ar.ws.Dir)
		}
	}
}

// readablePaths are the hierarchies a confined process of the attempt may read and
// execute; nil when the attempt runs unconfined.
func (p *judging) readablePaths(tr *taskRun, ar *attemptRun) []string {
	if p.cfg.Sandbox == nil || !p.cfg.Sandbox.Enabled() {
		return nil
	}
	pol := p.conf.confinement(tr, ar, &tr.agent).Policy
	return append(append([]string{}, pol.ReadExec...), pol.ReadWrite...)
}

// toolLookup finds programs as a confined check command's shell would: on its PATH,
// executable, and (confined) within what the sandbox lets it read. It remembers each
// answer for the claim it serves.
type toolLookup struct {
	path     string
	readable []string // nil: unconfined
	seen     map[string]string
}

// newJudgeToolLookup looks for programs as a judged run's shell would (verify
// commands, criteria): on the judge's PATH, within what judgeConfinement lets it read.
func (p *judging) newJudgeToolLookup(tr *taskRun, ar *attemptRun) *toolLookup {
	if judgeEnvOff {
		return p.newToolLookup(tr, ar)
	}
	path := p.judgePath(&tr.agent, ar.ws.Dir)
	var readable []string
	if p.cfg.Sandbox != nil && p.cfg.Sandbox.Enabled() {
		readable = slices.Concat(p.conf.systemPaths, path, []string{ar.ws.Dir}, p.judgeReads(tr, ar))
	}
	return &toolLookup{path: strings.Join(path, string(filepath.ListSeparator)), readable: readable, seen: map[string]string{}}
}

func (p *judging) newToolLookup(tr *taskRun, ar *attemptRun) *toolLookup {
	path := ""
	for _, kv := range worker.BaseEnv() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return &toolLookup{path: path, readable: p.readablePaths(tr, ar), seen: map[string]string{}}
}

// find returns "" when prog can be run, else what is wrong in words ("X, which is not
// on PATH (…)").
func (l *toolLookup) find(prog string) string {
	if why, ok := l.seen[prog]; ok {
		return why
	}
	why := l.lookup(prog)
	l.seen[prog] = why
	return why
}

func (l *toolLookup) lookup(prog string) string {
	if filepath.IsAbs(prog) {
		return l.usable(prog, prog)
	}
	var unreadable string
	for _, dir := range filepath.SplitList(l.path) {
		if !filepath.IsAbs(dir) {
			continue // relative to the workspace: nothing to find before the worker ran
		}
		cand := filepath.Join(dir, prog)
		fi, err := os.Stat(cand)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		why := l.usable(prog, cand)
		if why == "" {
			return ""
		}
		if unreadable == "" {
			unreadable = why
		}
	}
	if unreadable != "" {
		return unreadable
	}
	return fmt.Sprintf("%s, which is not on PATH (%s)", prog, contract.Truncate(l.path, 300))
}

// usable says why the program file at cand cannot be run confined, "" when it can.
func (l *toolLookup) usable(prog, cand string) string {
	fi, err := os.Stat(cand)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Sprintf("%s, which does not exist or is not executable", prog)
	}
	if l.readable == nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(cand)
	if err != nil {
		return fmt.Sprintf("%s, which cannot be resolved: %v", prog, err)
	}
	if !under(real, l.readable) {
		return fmt.Sprintf("%s, found at %s but out of the sandbox's reach (%s); an admin can add its directory to the agent's --sandbox-read", prog, cand, real)
	}
	return ""
}

// under reports whether path is one of roots or below one.
func under(path string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool {
		rel, err := filepath.Rel(r, path)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
	})
}

// notReady blocks a claimed task that is not ready, in its own transaction (the
// attempt prepared a worktree outside the claim): no attempt is recorded and no worker
// started.
func (p *attemptRunner) notReady(ctx context.Context, tr *taskRun, ar *attemptRun, missing []string) decision {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	err := p.inTx(sctx, func(tx models.Tx) error {
		t, err := tx.LockTask(sctx, tr.task.ID)
		if err != nil {
			return err
		}
		if t.State != models.TaskInProgress || t.LeaseOwner != p.cfg.RunnerID {
			return nil
		}
		if err := p.fixContract(sctx, tx, t, ar); err != nil {
			return err
		}
		if ar.stepConflict != nil {
			if _, err := p.svc.Attempts.BlockOnStepConflict(sctx, tx, p.runner, t, *ar.stepConflict); err != nil {
				return err
			}
		} else if err := p.svc.Attempts.BlockNotReady(sctx, tx, p.runner, t, missing); err != nil {
			return err
		}
		tr.task = *t
		return nil
	})
	if err != nil {
		p.log.Warn("blocking a task that is not ready failed; releasing it", "task_id", tr.task.ID, "err", err)
		p.releaseLease(tr)
		return decision{done: true}
	}
	p.logNotReady(tr, missing)
	return decision{done: true}
}

func (p *attemptRunner) logNotReady(tr *taskRun, missing []string) {
	p.log.Info("task not ready: blocked before any attempt", "task_id", tr.task.ID, "agent", tr.agent.Name, "missing", missing)
}
