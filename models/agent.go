package models

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/models/contract"
)

// AgentKind says how an agent acts: a worker is run by the runner through its command;
// a human acts in the dashboard, the API or MCP; the system kind is reserved for the
// runner itself, the party that checks work and that no agent can be.
type AgentKind string

// The agent kinds.
const (
	KindWorker AgentKind = "worker"
	KindHuman  AgentKind = "human"
	KindSystem AgentKind = "system"
)

// Well-known roles. Roles are free-form; these carry rules.
const (
	RoleLead  = "lead"  // verifies goals, reopens tasks, assigns
	RoleExec  = "exec"  // triages the inbox
	RoleAdmin = "admin" // manages agents, their commands and tokens
)

// RunnerAgentName is the name of the built-in system agent that stands for the runner
// in approvals and verifications.
const RunnerAgentName = "runner"

// Agent is a named participant with roles.
type Agent struct {
	ID       int64     `json:"id"`
	Name     string    `json:"name"`
	Kind     AgentKind `json:"kind"`
	Roles    []string  `json:"roles"`
	Command  string    `json:"command,omitempty"`  // worker: run by /bin/sh -c; admin-controlled, never task data
	Workdir  string    `json:"workdir,omitempty"`  // worker: directory to work in instead of a fresh one
	Worktree bool      `json:"worktree,omitempty"` // worker: a git worktree of Workdir per task
	// TargetBranch is where a worktree agent's tasks branch from and merge into;
	// empty: the checkout's current branch.
	TargetBranch string `json:"target_branch,omitempty"`
	// Forge names the forge (Forge.Name) a worktree agent's verified task branches
	// are pushed to and opened as pull requests on; "" for none.
	Forge       string `json:"forge,omitempty"`
	Concurrency int    `json:"concurrency"`        // worker: tasks at once (>= 1)
	Disabled    bool   `json:"disabled,omitempty"` // takes no new work, may not log in
	// Sandbox is what the worker's confined processes may reach besides their
	// workspace; admin-controlled like Command, and shown to admins only.
	Sandbox AgentSandbox `json:"sandbox,omitzero"`
	// PassEnv names variables of the runner's environment the agent's processes get
	// (API keys): admin-controlled, names only — values are never stored or shown.
	PassEnv []string `json:"pass_env,omitempty"`
	// DailyBudget caps what the agent's attempts may spend per UTC day; nil: no cap.
	DailyBudget *contract.Budget `json:"daily_budget,omitempty"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`

	// PasswordHash is a bcrypt hash for dashboard login; never rendered or serialised.
	PasswordHash string `json:"-"`

	// Scope is set by authentication when the request came with an attempt token: the
	// agent then acts only within that scope (see TokenScope). Never stored.
	Scope *TokenScope `json:"-"`
}

// HasRole reports whether the agent holds role.
func (a *Agent) HasRole(role string) bool {
	return a != nil && slices.Contains(a.Roles, role)
}

// IsRunner reports whether the agent is the runner's system identity.
func (a *Agent) IsRunner() bool { return a != nil && a.Kind == KindSystem && a.Name == RunnerAgentName }

var agentNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Normalize trims and lower-cases names and roles, drops duplicate roles and applies
// defaults, so that validation and storage see one canonical form.
func (a *Agent) Normalize() {
	a.Name = strings.ToLower(strings.TrimSpace(a.Name))
	seen := map[string]bool{}
	roles := a.Roles[:0:0]
	for _, r := range a.Roles {
		r = strings.ToLower(strings.TrimSpace(r))
		if r != "" && !seen[r] {
			seen[r] = true
			roles = append(roles, r)
		}
	}
	a.Roles = roles
	a.Command = strings.TrimSpace(a.Command)
	a.Forge = strings.ToLower(strings.TrimSpace(a.Forge))
	a.Workdir = strings.TrimSpace(a.Workdir)
	if a.Workdir != "" && WorkdirProblem(a.Workdir) == "" {
		a.Workdir = filepath.Clean(a.Workdir) // drops a trailing or doubled slash only
	}
	a.Sandbox.Normalize()
	if a.Kind == "" {
		a.Kind = KindHuman
	}
	if a.Concurrency == 0 {
		a.Concurrency = 1
	}
}

// Validate checks the agent's fields and returns an EINVALID error naming each bad one.
func (a *Agent) Validate() error {
	var fe FieldErrors
	if !agentNameRE.MatchString(a.Name) {
		fe.Add("name", "must be 1-63 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit")
	} else if a.Name == RunnerAgentName && a.Kind != KindSystem {
		fe.Add("name", "\"runner\" is reserved for the runner")
	}
	switch a.Kind {
	case KindWorker:
		if a.Command == "" {
			fe.Add("command", "a worker agent needs a command")
		}
	case KindHuman:
		if a.Command != "" {
			fe.Add("command", "only worker agents have a command")
		}
		if !a.Sandbox.IsZero() {
			fe.Add("sandbox", "only worker agents have a sandbox")
		}
	case KindSystem:
	default:
		fe.Add("kind", "must be worker or human")
	}
	for _, r := range a.Roles {
		if !contract.ValidRole(r) {
			fe.Add("roles", "role "+quote(r)+" must be 1-32 lower-case letters, digits, '_' or '-'")
		}
	}
	if len(a.Roles) == 0 && a.Kind != KindSystem {
		fe.Add("roles", "at least one role is required")
	}
	if a.Concurrency < 1 || a.Concurrency > 64 {
		fe.Add("concurrency", "must be between 1 and 64")
	}
	if msg := WorkdirProblem(a.Workdir); msg != "" {
		fe.Add("workdir", msg)
	}
	if a.Worktree && a.Workdir == "" {
		fe.Add("worktree", "needs a workdir to take worktrees of")
	}
	if a.TargetBranch != "" {
		if !a.Worktree {
			fe.Add("target_branch", "is for worktree agents: their tasks branch from it")
		} else if msg := BranchNameProblem(a.TargetBranch); msg != "" {
			fe.Add("target_branch", msg)
		}
	}
	a.Sandbox.validate(&fe)
	if msg := a.DailyBudget.Problem(); msg != "" {
		fe.Add("daily_budget", msg)
	}
	if msg := PassEnvProblem(a.PassEnv); msg != "" {
		fe.Add("pass_env", msg)
	} else if len(a.PassEnv) > 0 && a.Kind != KindWorker {
		fe.Add("pass_env", "only worker agents have processes to pass variables to")
	}
	return fe.Err()
}

// envNameRE is an environment variable's name as a shell writes it.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// PassEnvProblem says what is wrong with a list of variable names to pass to an
// agent's processes, "" when nothing is: each a plain name, at most 32, and none the
// runner sets itself (PATH, HOME, TMPDIR, COUNTERSIGN_*).
func PassEnvProblem(names []string) string {
	if len(names) > 32 {
		return "at most 32 variables"
	}
	for _, n := range names {
		switch {
		case !envNameRE.MatchString(n):
			return quote(n) + " is not a variable name"
		case n == "PATH" || n == "HOME" || n == "TMPDIR" || strings.HasPrefix(n, "COUNTERSIGN_"):
			return quote(n) + " is set by the runner itself"
		}
	}
	return ""
}

// Token is a bearer credential of an agent. Only the SHA-256 of the secret is kept.
// A token with a TaskID is an attempt token: the runner issues it for one attempt of
// that task, and it acts only within that task (see TokenScope).
type Token struct {
	ID         int64      `json:"id"`
	AgentID    int64      `json:"agent_id"`
	Name       string     `json:"name"`
	Hash       string     `json:"-"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"` // written at most once a minute
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`   // nil: never
	RevokedAt  *time.Time `json:"revoked_at,omitempty"`
	TaskID     *int64     `json:"task_id,omitempty"` // attempt tokens: the task they serve
	Attempt    int        `json:"attempt,omitempty"` // attempt tokens: the attempt number
}

// Session is a signed-in dashboard session. The cookie holds a random secret; only its
// SHA-256 (ID) is stored. CSRF is the per-session token forms must echo.
type Session struct {
	ID        string    `json:"-"`
	AgentID   int64     `json:"agent_id"`
	CSRF      string    `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

func quote(s string) string { return "\"" + s + "\"" }
