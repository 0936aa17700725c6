// Command countersign runs the Countersign web application, its runner pool and its
// ledger publisher, and offers the operator's commands (migrate, agent add|update,
// forge add|update|rotate-secret|list|rm|map|unmap, token create|list|revoke, template import/export, task import, ledger verify,
// attest key|verify, recheck, hcs create-topic).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// command is one subcommand: its name (possibly two words), a one-line summary and
// its entry point, which parses its own flags from args.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, out io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "run the web app, API, MCP server, runner pool and ledger publisher", runServe},
		{"runner", "run only the runner pool and publisher (more machines on one PostgreSQL)", runRunner},
		{"migrate", "apply database migrations and exit", runMigrate},
		{"agent add", "add an agent: countersign agent add NAME --kind worker|human --roles a,b", runAgentAdd},
		{"agent password", "set or reset a person's dashboard password (stdin, or a generated one): countersign agent password NAME", runAgentPassword},
		{"agent update", "change an agent's roles, command, workdir or sandbox: countersign agent update NAME --sandbox-write DIR", runAgentUpdate},
		{"forge add", "add a GitHub or GitLab repository for pull requests: countersign forge add NAME --kind github --repo OWNER/NAME --token-file FILE", runForgeAdd},
		{"forge update", "change a forge's kind, repository, base URL, target branch or token (--token-file|--token-env)", runForgeUpdate},
		{"forge rotate-secret", "give a forge a new webhook secret, printed once: countersign forge rotate-secret NAME", runForgeRotate},
		{"forge list", "list the forges (never their tokens)", runForgeList},
		{"forge rm", "remove a forge no agent names: countersign forge rm NAME", runForgeRemove},
		{"forge map", "make a forge login act as an agent: countersign forge map NAME LOGIN AGENT", runForgeMap},
		{"forge unmap", "remove a forge login's mapping: countersign forge unmap NAME LOGIN", runForgeUnmap},
		{"token create", "print a new bearer token for an agent: countersign token create AGENT [--expires 30d|720h|never]", runTokenCreate},
		{"token list", "list an agent's tokens with their status: countersign token list AGENT", runTokenList},
		{"token revoke", "revoke a token: countersign token revoke ID | --agent NAME --name TOKNAME", runTokenRevoke},
		{"template import", "import a workflow template from a YAML or JSON file", runTemplateImport},
		{"template export", "print a workflow template as YAML", runTemplateExport},
		{"task import", "create a task from a Markdown file with YAML front matter", runTaskImport},
		{"workspaces prune", "remove the git worktrees no open task needs (verified, cancelled, gone); branches stay", runWorkspacesPrune},
		{"ledger verify", "recompute the local ledger's hash chain and name the first bad entry", runLedgerVerify},
		{"attest key", "print the public key (PEM) the runner's attestations verify with", runAttestKey},
		{"attest verify", "check an attestation: signature, subject commit, ledger entry, revocation: countersign attest verify FILE | --task ID", runAttestVerify},
		{"recheck", "compare verified tasks' work with what was verified; mark changed ones stale: countersign recheck [--task ID | --goal ID]", runRecheck},
		{"hcs create-topic", "create a Hedera Consensus Service topic with a submit key", runHCSCreateTopic},
		{"version", "print the version", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := dispatch(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "countersign:", err)
		os.Exit(2)
	}
}

// dispatch finds the subcommand named by the first one or two words of args.
func dispatch(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(out)
		if len(args) == 0 {
			return errors.New("a command is required")
		}
		return nil
	}
	for _, c := range commands() {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.name {
			return c.run(ctx, args[len(words):], out)
		}
	}
	usage(out)
	return fmt.Errorf("unknown command %q", strings.Join(args[:min(2, len(args))], " "))
}

func usage(out io.Writer) {
	fmt.Fprintln(out, "Usage: countersign <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(out, "  %-18s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(out, "\nRun 'countersign <command> --help' for its flags.")
}

// newFlags returns a flag set for a subcommand that reports errors instead of exiting.
func newFlags(name, synopsis string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: countersign %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

func runVersion(_ context.Context, args []string, out io.Writer) error {
	fs := newFlags("version", "version", out)
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Fprintln(out, "countersign", version)
	return nil
}
