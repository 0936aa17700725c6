package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/worker"
)

// depsInstallOff skips the judge's install of a candidate's changed dependencies.
// Tests only, to show an honest fix that adds a dependency failing without it.
var depsInstallOff bool

// installTimeout bounds each of the judge's install commands.
const installTimeout = 10 * time.Minute

// installDependencies installs, in the judge's view and before any check runs, the
// dependencies of a candidate that changed them where its contract lets them change
// (verification.dependencies_may_change). The view's dependency trees are the judge's
// Env of the base, so without a change nothing is installed; with one, the judge runs
// its stacks' Install commands (no package's own scripts) itself, with the judge's
// environment and the egress of the runner's connect ports, and never uses the copy
// the worker installed. The report lists each changed dependency, marking those that
// resolve to a path. A dependency at a local path is not installed: the attempt fails,
// since it would swap code the tests import for the worker's. A failing install fails the attempt at the
// verify stage with the command's output: the candidate's manifests do not install.
// It reports whether verification may go on.
func (p *judging) installDependencies(ctx context.Context, tr *taskRun, ar *attemptRun) bool {
	jr := ar.judge
	v := &tr.task.Contract.Verification
	if jr == nil || jr.view == nil || !v.DependenciesMayChange || depsInstallOff {
		return true
	}
	start := time.Now()
	rules, err := p.rules(ctx)
	if err != nil {
		ar.infra("reading the project rules for the judge's install failed: "+err.Error(), err)
		return false
	}
	changed, err := p.changedDependencies(ctx, jr, rules.PinsFor(*v))
	if err != nil {
		ar.infra("comparing the candidate's dependencies with the base's failed: "+err.Error(), err)
		return false
	}
	jr.report.Dependencies = capList(changed, maxDependencies)
	if len(changed) == 0 {
		return true
	}
	if local := slices.DeleteFunc(slices.Clone(changed), func(d string) bool { return !strings.HasSuffix(d, judge.LocalPath) }); len(local) > 0 {
		// A dependency at a path is the worker's own code standing in for what the
		// tests import: the judge installs published versions only.
		ar.record(models.CheckResult{Stage: models.StageVerify, Verdict: models.VerdictFail,
			Diagnosis: "dependencies that resolve to a local path instead of a published version are not installed by the judge: " +
				strings.Join(local, "; ") + ". Depend on a published version, or change the code itself",
			DurationMS: time.Since(start).Milliseconds()})
		return false
	}
	facts, err := contract.DetectWorkspace(jr.view.Root(), nil)
	if err != nil {
		ar.infra("reading the judge's view for its install failed: "+err.Error(), err)
		return false
	}
	for _, in := range rules.InstallFor(*v, facts) {
		if diag, ok := p.install(ctx, tr, ar, in, rules.Stacks); !ok {
			ar.record(models.CheckResult{Stage: models.StageVerify, Verdict: models.VerdictFail,
				Diagnosis:  "the judge could not install the dependencies you changed (" + strings.Join(changed, "; ") + "): " + diag,
				DurationMS: time.Since(start).Milliseconds()})
			return false
		}
	}
	jr.report.PrepareMS += time.Since(start).Milliseconds()
	return true
}

// changedDependencies lists the dependencies the candidate changed in the files pins
// match, read from the judge's store on both sides (never from the workspace).
func (p *judging) changedDependencies(ctx context.Context, jr *judgeRun, pins []string) ([]string, error) {
	if len(pins) == 0 {
		return nil, nil
	}
	changes, err := p.judgeStore.Changes(ctx, jr.base.Commit, jr.cand.Commit)
	if err != nil {
		return nil, err
	}
	rules := judge.ParseRules(pins)
	var out []string
	for _, c := range changes {
		if len(judge.Protected([]string{c.Path}, rules)) == 0 {
			continue
		}
		before, err := p.blobOrNil(ctx, c.OldBlob)
		if err != nil {
			return nil, err
		}
		after, err := p.blobOrNil(ctx, c.NewBlob)
		if err != nil {
			return nil, err
		}
		out = append(out, judge.ChangedDependencies(c.Path, before, after)...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (p *judging) blobOrNil(ctx context.Context, id string) ([]byte, error) {
	if id == "" {
		return nil, nil
	}
	return p.judgeStore.Blob(ctx, id)
}

// install runs one Install command in the judge's view: the judge's environment,
// the view and a judge-owned install directory writable, the judge's Go module cache
// writable for Go's downloads, and the runner's connect ports (the registries). It
// returns the command's output tail when it fails.
func (p *judging) install(ctx context.Context, tr *taskRun, ar *attemptRun, in contract.InstallCommand, stacks []contract.Stack) (string, bool) {
	jr := ar.judge
	dir := jr.view.Root()
	je, err := p.newJudgeEnv(dir, stacks, tr.agent.Sandbox.Write)
	if err != nil {
		return err.Error(), false
	}
	defer je.Close()
	command := in.Command
	if strings.Contains(command, contract.InstallDirPlaceholder) {
		target := filepath.Join(jr.dir, fmt.Sprintf("deps-%d", ar.num))
		if err := os.RemoveAll(target); err != nil {
			return err.Error(), false
		}
		if err := os.MkdirAll(target, 0o750); err != nil {
			return err.Error(), false
		}
		command = strings.ReplaceAll(command, contract.InstallDirPlaceholder, target)
		jr.installDir = target
	}
	// The judge's own downloads: the admin's proxy and checksum settings apply, and
	// Go may write its module cache and go.sum in the view.
	env := append(slices.DeleteFunc(je.Vars(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOPROXY=") || strings.HasPrefix(kv, "GOFLAGS=")
	}), "GOFLAGS=-mod=mod")
	// The registries' addresses and the certificates the runner's host trusts for them
	// are the admin's: the runner's environment, never the worker's.
	env = append(env, worker.Inherit("GOPROXY", "GOSUMDB", "GOPRIVATE", "GONOPROXY", "GONOSUMDB",
		"npm_config_registry", "PIP_INDEX_URL", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "PIP_CERT",
		"REQUESTS_CA_BUNDLE")...)
	conf := p.conf.judgeConfinement(je, dir, p.judgeReads(tr, ar), nil)
	conf.Policy.ReadWrite = append(conf.Policy.ReadWrite, je.GoModCache)
	if jr.installDir != "" {
		conf.Policy.ReadWrite = append(conf.Policy.ReadWrite, jr.installDir)
	}
	conf.Policy.ConnectTCP, conf.Policy.Network = p.conf.connectPorts(), nil // the registries
	res, err := worker.Run(ctx, worker.Spec{Argv: []string{"/bin/sh", "-c", command}, Dir: dir, Env: env, ExactEnv: true,
		Timeout: installTimeout, KillGrace: p.cfg.KillGrace, TailBytes: 4096, Confine: conf})
	switch {
	case err != nil:
		return fmt.Sprintf("`%s`: %v", in.Command, err), false
	case res.ExitCode != 0:
		return fmt.Sprintf("`%s` exited %d: %s", in.Command, res.ExitCode, strings.TrimSpace(string(res.Tail))), false
	}
	return "", true
}

// withInstallDir puts the judge's install directory (Python's --target) on the
// judged run's PYTHONPATH after the judge's own entries, when there is one.
func (jr *judgeRun) withInstallDir(env []string) []string {
	if jr == nil || jr.installDir == "" {
		return env
	}
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PYTHONPATH="); ok {
			env[i] = "PYTHONPATH=" + strings.Join(slices.DeleteFunc([]string{v, jr.installDir}, func(s string) bool { return s == "" }), ":")
			return env
		}
	}
	return append(env, "PYTHONPATH="+jr.installDir)
}

// maxDependencies bounds the report's list of changed dependencies: a dependency tree
// in the repository changes a line per file.
const maxDependencies = 200

// capList is list cut to n entries, the last saying how many more there were.
func capList(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(slices.Clone(list[:n-1]), fmt.Sprintf("and %d more", len(list)-n+1))
}
