package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store"
	"github.com/countersign/countersign/runner"
)

// parseWithName parses args that hold one positional name before or after the flags.
func parseWithName(fs *flag.FlagSet, args []string, what string) (string, error) {
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return "", fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if name == "" {
		fs.Usage()
		return "", fmt.Errorf("%s is required", what)
	}
	return name, nil
}

// openStore opens and migrates the configured database.
func openStore(ctx context.Context, c *config) (*store.DB, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", c.DataDir, err)
	}
	db, err := store.Open(ctx, store.Config{DatabaseURL: c.DatabaseURL, SQLitePath: filepath.Join(c.DataDir, "countersign.db")})
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func runMigrate(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := newFlags("migrate", "migrate [flags]", out)
	storeFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(out, "migrations applied (%s)\n", db.Dialect())
	return nil
}

// sandboxFlags are the sandbox settings of agent add and agent update, with what the
// agent's processes get from the runner's environment and what it may spend a day.
type sandboxFlags struct {
	read, write listFlag
	connect     portsFlag
	unix        bool
	passEnv     listFlag
	dailyUSD    float64
}

// dailyBudget is the --daily-budget-usd flag as a budget (nil for 0: no cap).
func (f *sandboxFlags) dailyBudget() *contract.Budget {
	if f.dailyUSD == 0 {
		return nil
	}
	v := f.dailyUSD
	return &contract.Budget{MaxCostUSD: &v}
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.read, "sandbox-read", "worker: an absolute path its confined processes may read (repeat, or comma-separate)")
	fs.Var(&f.write, "sandbox-write", "worker: an absolute path its confined processes may write (repeat, or comma-separate)")
	fs.Var(&f.connect, "sandbox-connect", "worker: a TCP port its confined processes may connect to (repeat, or comma-separate)")
	fs.BoolVar(&f.unix, "sandbox-unix", false, "worker: its confined processes may open AF_UNIX sockets")
	fs.Var(&f.passEnv, "pass-env", "worker: names of variables of the runner's environment its processes get, e.g. ANTHROPIC_API_KEY (values are never stored)")
	fs.Float64Var(&f.dailyUSD, "daily-budget-usd", 0, "worker: what its attempts may spend per UTC day, in USD (0: no cap)")
}

func runAgentAdd(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var kind, roles, command, workdir, target, forge string
	var worktree, pwStdin bool
	var concurrency int
	var sb sandboxFlags
	fs := newFlags("agent add", "agent add NAME --kind worker|human --roles a,b [--command CMD] [--password-stdin] [--sandbox-read PATH] [--sandbox-write PATH] [--sandbox-connect PORT] [flags]", out)
	storeFlags(fs, &c)
	fs.StringVar(&kind, "kind", "human", "worker (run by the runner through --command) or human")
	fs.StringVar(&roles, "roles", "", "comma-separated roles, e.g. developer,reviewer or lead,exec,admin")
	fs.StringVar(&command, "command", "", "worker: shell command the runner runs with the brief on stdin; or a preset: claude, codex, gemini, qwen (docs/presets.md)")
	fs.StringVar(&workdir, "workdir", "", "worker: directory to work in instead of a fresh one per task")
	fs.BoolVar(&worktree, "worktree", false, "worker: give each task its own git worktree of --workdir")
	fs.StringVar(&target, "target-branch", "", "worker with --worktree: the branch tasks start from and merge into (default: the checkout's current branch)")
	fs.StringVar(&forge, "forge", "", "worker with --worktree: the forge (countersign forge add) its verified task branches become pull requests on")
	fs.IntVar(&concurrency, "concurrency", 1, "worker: tasks it may run at once")
	fs.BoolVar(&pwStdin, "password-stdin", false, "read a dashboard password from the first line of standard input")
	sb.register(fs)
	name, err := parseWithName(fs, args, "agent NAME")
	if err != nil {
		return err
	}
	password := ""
	if pwStdin {
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("reading password from stdin: %w", err)
		}
		password = strings.TrimRight(line, "\r\n")
		if password == "" {
			return fmt.Errorf("flag -password-stdin: standard input held no password")
		}
	}
	if preset, ok := runner.Presets[command]; ok {
		command = preset
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	a := &models.Agent{Name: name, Kind: models.AgentKind(kind), Roles: splitList(roles), Command: command,
		Workdir: absWorkdir(workdir), Worktree: worktree, TargetBranch: target, Forge: forge, Concurrency: concurrency,
		Sandbox: models.AgentSandbox{Read: sb.read, Write: sb.write, Connect: sb.connect, AllowUnix: sb.unix},
		PassEnv: sb.passEnv, DailyBudget: sb.dailyBudget()}
	if err := newService(db).Agents.CreateAgent(ctx, models.System, a, password); err != nil {
		return describe(err)
	}
	fmt.Fprintf(out, "agent %s added (id %d, %s, roles %s)\n", a.Name, a.ID, a.Kind, strings.Join(a.Roles, ","))
	return nil
}

func runAgentUpdate(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var roles, command, workdir, forge string
	var worktree, disabled bool
	var concurrency int
	var sb sandboxFlags
	fs := newFlags("agent update", "agent update NAME [--roles a,b] [--command CMD] [--workdir DIR] [--sandbox-read PATH] [--sandbox-write PATH] [--sandbox-connect PORT] [--sandbox-unix=false] [flags]\n\nOnly the flags given change; a sandbox flag replaces that whole list (give it \"\" to empty it).", out)
	storeFlags(fs, &c)
	fs.StringVar(&roles, "roles", "", "comma-separated roles")
	fs.StringVar(&command, "command", "", "worker: shell command, or a preset: claude, codex, gemini, qwen (docs/presets.md)")
	fs.StringVar(&workdir, "workdir", "", "worker: directory to work in (\"\" for a fresh one per task)")
	fs.BoolVar(&worktree, "worktree", false, "worker: a git worktree of --workdir per task")
	fs.StringVar(&forge, "forge", "", "worker with --worktree: the forge its verified task branches become pull requests on (\"\" for none)")
	fs.IntVar(&concurrency, "concurrency", 1, "worker: tasks it may run at once")
	fs.BoolVar(&disabled, "disabled", false, "takes no new work and may not sign in")
	sb.register(fs)
	name, err := parseWithName(fs, args, "agent NAME")
	if err != nil {
		return err
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	a, err := db.GetAgentByName(ctx, strings.ToLower(strings.TrimSpace(name)))
	if err != nil {
		return describe(err)
	}
	changed := 0
	fs.Visit(func(f *flag.Flag) {
		changed++
		switch f.Name {
		case "roles":
			a.Roles = splitList(roles)
		case "command":
			a.Command = command
			if preset, ok := runner.Presets[command]; ok {
				a.Command = preset
			}
		case "workdir":
			a.Workdir = absWorkdir(workdir)
		case "worktree":
			a.Worktree = worktree
		case "forge":
			a.Forge = forge
		case "concurrency":
			a.Concurrency = concurrency
		case "disabled":
			a.Disabled = disabled
		case "sandbox-read":
			a.Sandbox.Read = sb.read
		case "sandbox-write":
			a.Sandbox.Write = sb.write
		case "sandbox-connect":
			a.Sandbox.Connect = sb.connect
		case "sandbox-unix":
			a.Sandbox.AllowUnix = sb.unix
		case "pass-env":
			a.PassEnv = sb.passEnv
		case "daily-budget-usd":
			a.DailyBudget = sb.dailyBudget()
		default:
			changed--
		}
	})
	if changed == 0 {
		fs.Usage()
		return fmt.Errorf("nothing to change: give at least one of the agent's flags")
	}
	if err := newService(db).Agents.UpdateAgent(ctx, models.System, a); err != nil {
		return describe(err)
	}
	fmt.Fprintf(out, "agent %s updated\n", a.Name)
	return nil
}

// listFlag is a repeatable flag whose values may also be comma-separated; giving it
// "" sets it to the empty list.
type listFlag []string

// String implements flag.Value.
func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value.
func (l *listFlag) Set(v string) error {
	if *l == nil {
		*l = listFlag{}
	}
	*l = append(*l, splitList(v)...)
	return nil
}

// portsFlag is a repeatable, comma-separable flag of TCP ports.
type portsFlag []int

// String implements flag.Value.
func (p *portsFlag) String() string {
	s := make([]string, len(*p))
	for i, n := range *p {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// Set implements flag.Value.
func (p *portsFlag) Set(v string) error {
	if *p == nil {
		*p = portsFlag{}
	}
	for _, s := range splitList(v) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q is not a TCP port (1-65535)", s)
		}
		*p = append(*p, n)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func runTokenCreate(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var name, expires string
	fs := newFlags("token create", "token create AGENT [--name LABEL] [--expires 30d|720h|never] [flags]", out)
	storeFlags(fs, &c)
	fs.StringVar(&name, "name", "cli", "a label for the token")
	fs.StringVar(&expires, "expires", "90d", "lifetime: days (30d), a duration (720h) or never")
	agent, err := parseWithName(fs, args, "AGENT")
	if err != nil {
		return err
	}
	ttl, err := models.ParseTokenTTL(expires)
	if err != nil {
		return fmt.Errorf("flag -expires: %q is not a number of days (30d), a duration (720h) or never", expires)
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	secret, _, err := newService(db).Tokens.IssueToken(ctx, models.System, agent, name, ttl)
	if err != nil {
		return describe(err)
	}
	fmt.Fprintln(out, secret)
	return nil
}

func runTokenList(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := newFlags("token list", "token list AGENT [flags]", out)
	storeFlags(fs, &c)
	agent, err := parseWithName(fs, args, "AGENT")
	if err != nil {
		return err
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := newService(db)
	tokens, err := svc.Tokens.ListTokens(ctx, models.System, agent)
	if err != nil {
		return describe(err)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tCREATED\tEXPIRES\tLAST USED")
	for _, t := range tokens {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Status(svc.Now()), tokenTime(&t.CreatedAt, ""), tokenTime(t.ExpiresAt, "never"), tokenTime(t.LastUsedAt, "never"))
	}
	return tw.Flush()
}

// tokenTime formats an optional time for a table, none when it is nil.
func tokenTime(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format("2006-01-02 15:04Z")
}

func runTokenRevoke(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var agent, name string
	fs := newFlags("token revoke", "token revoke ID | token revoke --agent NAME --name TOKNAME [flags]", out)
	storeFlags(fs, &c)
	fs.StringVar(&agent, "agent", "", "the agent whose tokens called --name are revoked")
	fs.StringVar(&name, "name", "", "the label of the tokens to revoke (with --agent)")
	var idArg string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		idArg, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if idArg == "" && fs.NArg() > 0 {
		idArg = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	var id int64
	switch {
	case idArg != "" && (agent != "" || name != ""):
		return fmt.Errorf("give a token ID or --agent and --name, not both")
	case idArg != "":
		n, err := strconv.ParseInt(idArg, 10, 64)
		if err != nil || n <= 0 {
			return fmt.Errorf("token ID %q is not a positive number (see countersign token list AGENT)", idArg)
		}
		id = n
	case agent == "" || name == "":
		fs.Usage()
		return fmt.Errorf("a token ID, or --agent and --name, is required")
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	svc := newService(db)
	var revoked []models.Token
	if id != 0 {
		t, err := svc.Tokens.RevokeToken(ctx, models.System, id)
		if err != nil {
			return describe(err)
		}
		revoked = []models.Token{*t}
	} else if revoked, err = svc.Tokens.RevokeTokensByName(ctx, models.System, agent, name); err != nil {
		return describe(err)
	}
	if len(revoked) == 0 {
		return fmt.Errorf("agent %s has no unrevoked token called %q", agent, name)
	}
	for _, t := range revoked {
		fmt.Fprintf(out, "token %d (%s) revoked\n", t.ID, t.Name)
	}
	return nil
}

func runTemplateImport(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var name string
	fs := newFlags("template import", "template import FILE [--name NAME] [flags]", out)
	storeFlags(fs, &c)
	fs.StringVar(&name, "name", "", "template name when the file has none (default: the file name without extension)")
	file, err := parseWithName(fs, args, "FILE")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	t, err := models.ParseTemplate(data)
	if err != nil {
		return describe(err)
	}
	if name != "" {
		t.Name = name
	}
	if t.Name == "" {
		t.Name = models.TemplateNameFromFile(file)
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := newService(db).Templates.SaveTemplate(ctx, models.System, t); err != nil {
		return describe(err)
	}
	fmt.Fprintf(out, "template %s version %d saved (%d steps)\n", t.Name, t.Version, len(t.Steps))
	return nil
}

func runTemplateExport(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var version int
	fs := newFlags("template export", "template export NAME [--version N] [flags]", out)
	storeFlags(fs, &c)
	fs.IntVar(&version, "version", 0, "version to export (default: the latest)")
	name, err := parseWithName(fs, args, "NAME")
	if err != nil {
		return err
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	t, err := db.GetTemplate(ctx, name, version)
	if err != nil {
		return describe(err)
	}
	b, err := models.MarshalTemplateYAML(t)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

func runTaskImport(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var goal int64
	var assignee string
	fs := newFlags("task import", "task import FILE.md [--goal ID] [--assignee AGENT] [flags]", out)
	storeFlags(fs, &c)
	fs.Int64Var(&goal, "goal", 0, "goal to put the task in")
	fs.StringVar(&assignee, "assignee", "", "agent to assign the task to")
	file, err := parseWithName(fs, args, "FILE")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	t, err := models.ParseTaskMarkdown(data)
	if err != nil {
		return describe(err)
	}
	spec := models.TaskSpec{Title: t.Title, Brief: t.Brief, Role: t.Role, Priority: t.Priority, Approve: t.Approve,
		Verify: t.Verify, Contract: t.Contract, DependsOn: t.DependsOn, Assignee: assignee}
	if goal > 0 {
		spec.GoalID = &goal
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	created, err := newService(db).Tasks.CreateTask(ctx, models.System, spec)
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(out, "task %d created: %s (%s, contract %s)\n", created.ID, created.Title, created.State, created.Contract.Verification.Type)
	return nil
}

// describe turns a domain error into a message that names every bad field.
func describe(err error) error {
	if e, ok := err.(*models.Error); ok {
		return fmt.Errorf("%s", e.Error())
	}
	return err
}

// absWorkdir makes a --workdir given on the command line absolute against the current
// directory, as a shell user means it; the service refuses relative ones.
func absWorkdir(dir string) string {
	if dir == "" || filepath.IsAbs(dir) {
		return dir
	}
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}
