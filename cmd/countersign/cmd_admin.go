package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/models"
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

func runAgentAdd(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var kind, roles, command, workdir string
	var worktree, pwStdin bool
	var concurrency int
	fs := newFlags("agent add", "agent add NAME --kind worker|human --roles a,b [--command CMD] [--password-stdin] [flags]", out)
	storeFlags(fs, &c)
	fs.StringVar(&kind, "kind", "human", "worker (run by the runner through --command) or human")
	fs.StringVar(&roles, "roles", "", "comma-separated roles, e.g. developer,reviewer or lead,exec,admin")
	fs.StringVar(&command, "command", "", "worker: shell command the runner runs with the brief on stdin; or a preset: claude")
	fs.StringVar(&workdir, "workdir", "", "worker: directory to work in instead of a fresh one per task")
	fs.BoolVar(&worktree, "worktree", false, "worker: give each task its own git worktree of --workdir")
	fs.IntVar(&concurrency, "concurrency", 1, "worker: tasks it may run at once")
	fs.BoolVar(&pwStdin, "password-stdin", false, "read a dashboard password from the first line of standard input")
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
		Workdir: workdir, Worktree: worktree, Concurrency: concurrency}
	if err := newService(db).CreateAgent(ctx, models.System, a, password); err != nil {
		return describe(err)
	}
	fmt.Fprintf(out, "agent %s added (id %d, %s, roles %s)\n", a.Name, a.ID, a.Kind, strings.Join(a.Roles, ","))
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
	var name string
	fs := newFlags("token create", "token create AGENT [--name LABEL] [flags]", out)
	storeFlags(fs, &c)
	fs.StringVar(&name, "name", "cli", "a label for the token")
	agent, err := parseWithName(fs, args, "AGENT")
	if err != nil {
		return err
	}
	db, err := openStore(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	secret, err := newService(db).CreateToken(ctx, models.System, agent, name)
	if err != nil {
		return describe(err)
	}
	fmt.Fprintln(out, secret)
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
	if err := newService(db).SaveTemplate(ctx, models.System, t); err != nil {
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
	created, err := newService(db).CreateTask(ctx, models.System, spec)
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
