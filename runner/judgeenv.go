package runner

import (
	"context"
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

// judgeEnvOff switches the judge's own environment off: judged runs get the worker's
// environment and confinement as before (the agent's home). Tests only, to show each
// hostile worker's cheat passing without the defence.
var judgeEnvOff bool

// judgeRoot is the judge-owned root of judged runs' environments (runs, caches): in
// the data dir, out of every worker's reach.
func (p *judging) judgeRoot() string {
	return filepath.Join(p.cfg.Workspaces.Root(), "judge-env")
}

// newJudgeEnv makes a fresh environment for one judged run of dir, with the stacks'
// judge variables; no PATH entry lies in the data dir or in untrusted.
func (p *judging) newJudgeEnv(dir string, stacks []contract.Stack, untrusted []string) (*judge.Env, error) {
	return judge.NewEnv(judge.EnvOptions{Root: p.judgeRoot(), Dir: dir, Stacks: stacks, Path: p.cfg.JudgePath,
		Untrusted: append([]string{p.cfg.Workspaces.Root()}, untrusted...), GoCache: p.cfg.JudgeGoCache,
		Unconfined: p.cfg.Sandbox == nil || !p.cfg.Sandbox.Enabled()})
}

// judgePath is the PATH of the agent's judged runs: the judge's candidates without
// what the agent's workers could write.
func (p *judging) judgePath(a *models.Agent, dir string) []string {
	return judge.JudgePath(judge.PathCandidates(p.cfg.JudgePath), append([]string{dir, p.cfg.Workspaces.Root()}, a.Sandbox.Write...))
}

// judgedRun is what a judged run of an attempt is given: its environment (the judge's
// and the task's facts), its confinement, and where results files go.
type judgedRun struct {
	env        []string
	confine    *worker.Confinement
	resultsDir string
	close      func()
}

// judged prepares a judged run of dir for attempt ar: the judge's environment and
// confinement (judgeConfinement), never the agent's home. Call close when it is done.
func (p *judging) judged(tr *taskRun, ar *attemptRun, dir string, stacks []contract.Stack) (*judgedRun, error) {
	if judgeEnvOff {
		env := append(worker.BaseEnv(), worker.Inherit("GOFLAGS")...)
		env = append(append(env, p.conf.taskEnv(tr, ar)...), p.conf.confinedEnv(ar, &tr.agent)...)
		return &judgedRun{env: env, confine: p.conf.confinement(tr, ar, &tr.agent), resultsDir: ar.tmp, close: func() {}}, nil
	}
	je, err := p.newJudgeEnv(dir, stacks, tr.agent.Sandbox.Write)
	if err != nil {
		return nil, err
	}
	var onStart func(int) func()
	if p.cfg.Procs != nil {
		onStart = p.cfg.Procs.Track(tr.task.ID, ar.num)
	}
	return &judgedRun{env: p.checkEnv(tr, ar, je), confine: p.conf.judgeConfinement(je, dir, p.judgeReads(tr, ar), onStart), resultsDir: je.Tmp,
		close: func() {
			if err := je.Close(); err != nil {
				p.log.Warn("removing a judged run's environment failed", "dir", je.Run, "err", err)
			}
		}}, nil
}

// judgeReads are what an attempt's judged runs may read besides the system and the
// judge's own: the repository's git directory (a worktree's), the task's meta dir
// (its briefs), and the paths an admin lets the agent read (its tools). Nothing there
// is the worker's to write.
func (p *judging) judgeReads(tr *taskRun, ar *attemptRun) []string {
	gitRead, _ := ar.ws.GitPaths()
	// The judge's view has a git repository of the judge's whose history is the user's
	// repository's: a checkout used in place lends its .git (read only).
	if fi, err := os.Lstat(filepath.Join(ar.ws.Dir, ".git")); len(gitRead) == 0 && err == nil && fi.IsDir() {
		gitRead = []string{filepath.Join(ar.ws.Dir, ".git")}
	}
	return slices.Concat(gitRead, []string{ar.ws.MetaDir}, tr.agent.Sandbox.Read)
}

// goPrepTimeout bounds each of the judge's own Go preparation commands.
const goPrepTimeout = 10 * time.Minute

// prepareGo readies the judge's Go caches for a module at dir before the first
// attempt, while the worker has written nothing: `go mod download` into the judge's
// module cache (the only egress a judged Go project gets: judged runs have
// GOPROXY=off and the cache read-only), then a compile-only `go test -exec=/bin/true`
// into the judge's shared build cache, which judged runs see read-only under a layer
// of their own. Neither runs any of the project's code. Failures are logged, not
// fatal: a judged run that misses a module fails on its own and says which.
func (p *judging) prepareGo(ctx context.Context, tr *taskRun, dir string, stacks []contract.Stack) {
	if judgeEnvOff {
		return
	}
	if fi, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil || !fi.Mode().IsRegular() {
		return
	}
	je, err := p.newJudgeEnv(dir, stacks, tr.agent.Sandbox.Write)
	if err != nil {
		p.log.Warn("preparing the judge's Go caches failed", "dir", dir, "err", err)
		return
	}
	defer je.Close()
	shared := p.cfg.JudgeGoCache
	if shared == "" {
		shared = judge.SharedGoCache(p.judgeRoot())
	}
	base := slices.DeleteFunc(je.Vars(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOPROXY=") || strings.HasPrefix(kv, "GOCACHE=")
	})
	// The judge's own download: the admin's proxy and checksum settings apply.
	download := append(append(slices.Clone(base), "GOCACHE="+shared, "GOFLAGS=-mod=mod"),
		worker.Inherit("GOPROXY", "GOSUMDB", "GOPRIVATE", "GONOPROXY", "GONOSUMDB")...)
	conf := p.conf.judgeConfinement(je, dir, nil, nil)
	conf.Policy.ReadWrite = append(conf.Policy.ReadWrite, je.GoModCache, shared)
	conf.Policy.ConnectTCP, conf.Policy.Network = p.conf.connectPorts(), nil // the module proxy
	goBin := je.LookPath("go")
	if goBin == "" {
		return // no go on the judge's PATH: the judged runs say so themselves
	}
	p.goPrep(ctx, dir, download, conf, goBin, "mod", "download")
	compile := append(slices.Clone(base), "GOCACHE="+shared, "GOPROXY=off")
	conf = p.conf.judgeConfinement(je, dir, nil, nil)
	conf.Policy.ReadWrite = append(conf.Policy.ReadWrite, shared)
	p.goPrep(ctx, dir, compile, conf, goBin, "test", "-exec=/bin/true", "-run=^$", "-count=1", "./...")
}

// goPrep runs one of the judge's Go preparation commands in dir and logs a failure.
func (p *judging) goPrep(ctx context.Context, dir string, env []string, conf *worker.Confinement, argv ...string) {
	res, err := worker.Run(ctx, worker.Spec{Argv: argv, Dir: dir, Env: env, ExactEnv: true, Timeout: goPrepTimeout,
		KillGrace: p.cfg.KillGrace, TailBytes: 2048, Confine: conf})
	if err != nil || res.ExitCode != 0 {
		p.log.Warn("the judge's Go preparation failed", "command", strings.Join(argv, " "), "dir", dir,
			"exit", res.ExitCode, "err", err, "output", string(res.Tail))
	}
}

// checkEnv is the environment of a judged run (verify commands, criteria, the floor's
// base run, held-out tests): the judge's (see judge.Env: a fresh judge-owned home and
// temp dir, a fixed PATH, the stacks' user configuration off, judge-owned caches)
// and the task facts. Nothing of the worker's agent home, nor of the runner's own
// environment beyond the judge's short list: a verify command runs the worker's code,
// and a home the worker wrote would configure the tools that judge it.
func (p *judging) checkEnv(tr *taskRun, ar *attemptRun, je *judge.Env) []string {
	return append(ar.judge.withInstallDir(je.Vars()), p.conf.taskEnv(tr, ar)...)
}
