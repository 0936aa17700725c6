package runner

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/judge"
	"github.com/countersign/countersign/runner/sandbox"
	"github.com/countersign/countersign/runner/worker"
)

// DefaultConnectPorts are the TCP ports every confined run may connect to besides
// Countersign's own: HTTP and HTTPS, for package registries and model APIs.
var DefaultConnectPorts = []uint16{80, 443}

// EnvURL is how a worker reaches Countersign's API and MCP server, as itself.
const EnvURL = "COUNTERSIGN_URL"

// agentHome is the agent's own home directory, its HOME when confined: caches,
// ~/.claude, a Go build cache. It outlives attempts; nothing else of the data dir is
// visible to the agent.
func (p *confiner) agentHome(a *models.Agent) string {
	return filepath.Join(p.cfg.Workspaces.Root(), "agents", a.Name, "home")
}

// attemptTmp is the attempt's private temp dir, its TMPDIR; released (see tmpDirs)
// when the attempt is settled.
func (p *confiner) attemptTmp(taskID int64, attempt int) string {
	return filepath.Join(p.cfg.Workspaces.Root(), "tmp", fmt.Sprintf("task-%d-attempt-%d", taskID, attempt))
}

// prepareConfinement creates the attempt's temp dir and the agent's home.
func (p *confiner) prepareConfinement(tr *taskRun, ar *attemptRun) error {
	tmp := p.attemptTmp(tr.task.ID, ar.num)
	if err := p.tmpDirs.make(tmp); err != nil {
		return err
	}
	ar.tmp = tmp
	return os.MkdirAll(p.agentHome(&tr.agent), 0o750)
}

// confinement is how every process of an attempt runs — the worker, its verify
// commands, git status, the reviewer — given the agent whose code or rights are at
// stake (see policy).
func (p *confiner) confinement(tr *taskRun, ar *attemptRun, a *models.Agent) *worker.Confinement {
	gitRead, gitWrite := ar.ws.GitPaths()
	pol := p.policy(a, ar.ws.Dir, ar.ws.MetaDir, ar.tmp)
	pol.ReadExec, pol.ReadWrite = append(pol.ReadExec, gitRead...), append(pol.ReadWrite, gitWrite...)
	pol.Network = p.runNetwork(ar, a)
	c := &worker.Confinement{Sandbox: p.cfg.Sandbox, Policy: pol}
	if p.cfg.Procs != nil {
		c.OnStart = p.cfg.Procs.Track(tr.task.ID, ar.num)
	}
	return c
}

// judgeConfinement is how a judged run of dir is confined (verify commands, criteria,
// the floor's base run, held-out tests, deferred checks): it writes only dir and the
// run's own home, temp dir and build cache layer; it reads the system, the judge's
// read-only files and module cache, and read; it connects only to the ports the
// stacks' rules give the judge (none by default). Never the agent's home: what the
// worker left there must not configure the judge. onStart tracks the process group
// (nil: untracked).
func (p *confiner) judgeConfinement(je *judge.Env, dir string, read []string, onStart func(pid int) (done func())) *worker.Confinement {
	pol := sandbox.Policy{
		ReadExec:   slices.Concat(p.systemPaths, je.Readable(), read),
		ReadWrite:  slices.Concat([]string{dir}, je.Writable(), p.cfg.JudgeWrite),
		ConnectTCP: slices.Clone(je.Ports),
	}
	if len(je.Ports) == 0 && p.privateNetwork() {
		// No network at all: not even UDP, which Landlock's port rules do not cover.
		pol.Network = &sandbox.NetworkPolicy{}
	}
	return &worker.Confinement{Sandbox: p.cfg.Sandbox, OnStart: onStart, Policy: pol}
}

// viewConfinement is how a process of agent a runs in a judge's view dir: a's
// confinement with dir writable in place of the workspace, which it may not touch.
func (p *confiner) viewConfinement(tr *taskRun, ar *attemptRun, a *models.Agent, dir string) *worker.Confinement {
	pol := p.policy(a, dir, ar.ws.MetaDir, ar.tmp)
	// The view's git repository borrows the history from the user's repository.
	if read, _ := ar.ws.GitPaths(); len(read) > 0 {
		pol.ReadExec = append(pol.ReadExec, read...)
	} else if fi, err := os.Lstat(filepath.Join(ar.ws.Dir, ".git")); err == nil && fi.IsDir() {
		pol.ReadExec = append(pol.ReadExec, filepath.Join(ar.ws.Dir, ".git"))
	}
	pol.Network = p.runNetwork(ar, a)
	c := &worker.Confinement{Sandbox: p.cfg.Sandbox, Policy: pol}
	if p.cfg.Procs != nil {
		c.OnStart = p.cfg.Procs.Track(tr.task.ID, ar.num)
	}
	return c
}

// policy is what a's confined processes may touch in an attempt whose workspace, meta
// dir (briefs) and temp dir are given: those and a's home writable (the meta dir only
// readable); the system and a's extra paths readable; Countersign's port, the default
// ports and a's own reachable.
func (p *confiner) policy(a *models.Agent, workspace, meta, tmp string) sandbox.Policy {
	return sandbox.Policy{
		ReadExec:   append(append([]string{meta}, p.systemPaths...), a.Sandbox.Read...),
		ReadWrite:  append([]string{workspace, tmp, p.agentHome(a)}, a.Sandbox.Write...),
		ConnectTCP: append(p.connectPorts(), toPorts(a.Sandbox.Connect)...),
		AllowUnix:  a.Sandbox.AllowUnix,
	}
}

// EffectivePolicy describes, one grant per line, what a's confined processes may
// touch in any attempt — with <task> and <n> standing for the task and attempt — and
// whether the sandbox confines them at all; for the agent page.
func (p *confiner) EffectivePolicy(a *models.Agent) []string {
	if p.cfg.Sandbox == nil || !p.cfg.Sandbox.Enabled() {
		return []string{"unconfined: the sandbox is off"}
	}
	root := p.cfg.Workspaces.Root()
	ws := filepath.Join(root, "tasks", "<task>")
	if a.Worktree {
		ws = filepath.Join(root, "worktrees", "<task>")
	}
	pol := p.policy(a, ws, filepath.Join(root, "meta", "<task>"), filepath.Join(root, "tmp", "task-<task>-attempt-<n>"))
	out := pol.Describe()
	if p.privateNetwork() {
		egress := strings.Join(p.cfg.EgressAllow, ", ")
		if egress == "" {
			egress = "no other host"
		}
		out = append(out, "network: a private one per run, reaching Countersign's API, the model gateway and, through the egress proxy, "+egress)
	}
	return out
}

// confinedEnv is what a confined process's environment says about where it lives.
func (p *confiner) confinedEnv(ar *attemptRun, a *models.Agent) []string {
	env := []string{"HOME=" + p.agentHome(a), "TMPDIR=" + ar.tmp}
	if p.cfg.APIURL != "" {
		env = append(env, EnvURL+"="+p.cfg.APIURL)
	}
	return env
}

// connectPorts are the ports every run may reach: Countersign's own (its API, its
// model gateway) and the defaults.
func (p *confiner) connectPorts() []uint16 {
	ports := append([]uint16{}, p.cfg.ConnectPorts...)
	if port := urlPort(p.cfg.APIURL); port != 0 {
		ports = append(ports, port)
	}
	if port := p.gatewayPort(); port != 0 {
		ports = append(ports, port)
	}
	return ports
}

// urlPort is the TCP port a URL names or implies; 0 when it names none.
func urlPort(raw string) uint16 {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return 0
	}
	if s := u.Port(); s != "" {
		n, err := strconv.ParseUint(s, 10, 16)
		if err != nil {
			return 0
		}
		return uint16(n)
	}
	switch u.Scheme {
	case "https":
		return 443
	case "http":
		return 80
	}
	return 0
}

func toPorts(in []int) []uint16 {
	out := make([]uint16, 0, len(in))
	for _, n := range in {
		if n > 0 && n <= 65535 {
			out = append(out, uint16(n))
		}
	}
	return out
}
