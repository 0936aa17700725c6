package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store"
)

// The forge commands: the GitHub and GitLab repositories verified task branches go to
// as pull requests. A forge's token is read from a file, standard input or an
// environment variable, never from a flag's value (that would show in ps and in the
// shell's history), and no command prints it. The webhook secret is printed once, by
// forge add and forge rotate-secret.

// forgeFields are the flags of forge add and forge update.
type forgeFields struct {
	kind, repo, baseURL, target string
	tokenFile, tokenEnv         string
}

func (f *forgeFields) register(fs *flag.FlagSet) {
	fs.StringVar(&f.kind, "kind", "", "github or gitlab")
	fs.StringVar(&f.repo, "repo", "", "the repository: OWNER/NAME on GitHub, the project's path GROUP/NAME on GitLab")
	fs.StringVar(&f.baseURL, "base-url", "", "the API's base for GitHub Enterprise (https://HOST/api/v3/) or a self-managed GitLab (https://HOST); empty for github.com and gitlab.com")
	fs.StringVar(&f.target, "target-branch", "", "the branch pull requests merge into (default: the agent's target branch, then main)")
	fs.StringVar(&f.tokenFile, "token-file", "", "read the forge's access token from this file (- for standard input)")
	fs.StringVar(&f.tokenEnv, "token-env", "", "read the forge's access token from this environment variable")
}

// token reads the token from --token-file or --token-env: "" when neither is given,
// an error when both are, or when the source is empty.
func (f *forgeFields) token(stdin io.Reader) (string, error) {
	switch {
	case f.tokenFile != "" && f.tokenEnv != "":
		return "", errors.New("give --token-file or --token-env, not both")
	case f.tokenEnv != "":
		v := strings.TrimSpace(os.Getenv(f.tokenEnv))
		if v == "" {
			return "", fmt.Errorf("flag --token-env: the environment variable %s is empty or unset", f.tokenEnv)
		}
		return v, nil
	case f.tokenFile == "":
		return "", nil
	}
	var b []byte
	var err error
	if f.tokenFile == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, 8192))
	} else {
		b, err = os.ReadFile(f.tokenFile)
	}
	if err != nil {
		return "", fmt.Errorf("flag --token-file: %w", err) // names the file, never its content
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("flag --token-file: %s holds no token", f.tokenFile)
	}
	return v, nil
}

// forgeName normalizes a forge name typed on the command line as the service stores it.
func forgeName(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// openForges opens the store and the forge service over it; the caller closes db.
func openForges(ctx context.Context, c *config) (*store.DB, *models.Forges, error) {
	db, err := openStore(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	forges, err := models.NewForges(newService(db))
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, forges, nil
}

// printWebhookSecret prints where the forge's webhook goes and its secret, once.
func printWebhookSecret(out io.Writer, f *models.Forge, secret string) {
	fmt.Fprintf(out, "webhook URL:    <your Countersign's public URL>%s\n", handlers.ForgeWebhookPath(f.Name))
	fmt.Fprintf(out, "webhook secret: %s\n", secret)
	fmt.Fprintln(out, "Paste both into the repository's webhook settings now: the secret is not shown again ('countersign forge rotate-secret "+f.Name+"' makes a new one).")
	if f.Kind == models.ForgeGitLab {
		fmt.Fprintln(out, "GitLab: the secret goes in Secret token; triggers: merge request events, comments, push events.")
	} else {
		fmt.Fprintln(out, "GitHub: content type application/json; events: pull requests, pull request reviews, pushes.")
	}
}

func runForgeAdd(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var ff forgeFields
	fs := newFlags("forge add", "forge add NAME --kind github|gitlab --repo OWNER/NAME [--base-url URL] [--target-branch B] --token-file FILE | --token-env VAR", out)
	storeFlags(fs, &c)
	ff.register(fs)
	name, err := parseWithName(fs, args, "forge NAME")
	if err != nil {
		return err
	}
	token, err := ff.token(os.Stdin)
	if err != nil {
		return err
	}
	if token == "" {
		return errors.New("the forge's token is required: --token-file FILE (- for standard input) or --token-env VAR")
	}
	db, forges, err := openForges(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	f := &models.Forge{Name: name, Kind: ff.kind, Repo: ff.repo, BaseURL: ff.baseURL, TargetBranch: ff.target, Token: token}
	secret, err := forges.Create(ctx, models.System, f)
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(out, "forge %s added (%s, %s)\n", f.Name, f.Kind, f.Repo)
	printWebhookSecret(out, f, secret)
	return nil
}

func runForgeUpdate(ctx context.Context, args []string, out io.Writer) error {
	var c config
	var ff forgeFields
	fs := newFlags("forge update", "forge update NAME [--kind github|gitlab] [--repo R] [--base-url URL] [--target-branch B] [--token-file FILE | --token-env VAR]\n\nOnly the flags given change; a token given replaces the stored one.", out)
	storeFlags(fs, &c)
	ff.register(fs)
	name, err := parseWithName(fs, args, "forge NAME")
	if err != nil {
		return err
	}
	token, err := ff.token(os.Stdin)
	if err != nil {
		return err
	}
	db, forges, err := openForges(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	cur, err := db.GetForgeByName(ctx, forgeName(name))
	if err != nil {
		return describe(err)
	}
	in := *cur
	in.Token = token // "" keeps the stored one
	changed := 0
	fs.Visit(func(f *flag.Flag) {
		changed++
		switch f.Name {
		case "kind":
			in.Kind = ff.kind
		case "repo":
			in.Repo = ff.repo
		case "base-url":
			in.BaseURL = ff.baseURL
		case "target-branch":
			in.TargetBranch = ff.target
		case "token-file", "token-env":
		default:
			changed--
		}
	})
	if changed == 0 {
		fs.Usage()
		return errors.New("nothing to change: give at least one of the forge's flags")
	}
	f, err := forges.Update(ctx, models.System, &in)
	if err != nil {
		return describe(err)
	}
	msg := ""
	if token != "" {
		msg = ", token replaced"
	}
	fmt.Fprintf(out, "forge %s updated (%s, %s%s)\n", f.Name, f.Kind, f.Repo, msg)
	return nil
}

// runForgeName runs a command whose one argument is a forge name.
func runForgeName(ctx context.Context, cmd, synopsis string, args []string, out io.Writer,
	fn func(ctx context.Context, forges *models.Forges, name string) error) error {
	var c config
	fs := newFlags(cmd, synopsis, out)
	storeFlags(fs, &c)
	name, err := parseWithName(fs, args, "forge NAME")
	if err != nil {
		return err
	}
	db, forges, err := openForges(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	return describe(fn(ctx, forges, forgeName(name)))
}

func runForgeRotate(ctx context.Context, args []string, out io.Writer) error {
	return runForgeName(ctx, "forge rotate-secret", "forge rotate-secret NAME", args, out, func(ctx context.Context, forges *models.Forges, name string) error {
		secret, err := forges.RotateWebhookSecret(ctx, models.System, name)
		if err != nil {
			return err
		}
		f, err := forges.Store().GetForgeByName(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "forge %s has a new webhook secret; deliveries signed with the old one are refused from now on\n", name)
		printWebhookSecret(out, f, secret)
		return nil
	})
}

func runForgeRemove(ctx context.Context, args []string, out io.Writer) error {
	return runForgeName(ctx, "forge rm", "forge rm NAME", args, out, func(ctx context.Context, forges *models.Forges, name string) error {
		if err := forges.Delete(ctx, models.System, name); err != nil {
			return err
		}
		fmt.Fprintf(out, "forge %s removed\n", name)
		return nil
	})
}

func runForgeList(ctx context.Context, args []string, out io.Writer) error {
	var c config
	fs := newFlags("forge list", "forge list", out)
	storeFlags(fs, &c)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	db, forges, err := openForges(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := forges.Store().ListForges(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tREPO\tBASE URL\tTARGET BRANCH\tLOGINS")
	for _, f := range list {
		users, err := forges.Store().ListForgeUsers(ctx, f.ID)
		if err != nil {
			return err
		}
		var logins []string
		for _, u := range users {
			logins = append(logins, u.Login+"="+u.Agent)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", f.Name, f.Kind, f.Repo, orDash(f.BaseURL), orDash(f.TargetBranch), orDash(strings.Join(logins, ",")))
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// runForgeMapping parses NAME LOGIN [AGENT] (want is 3 for map, 2 for unmap) and maps
// or unmaps the login.
func runForgeMapping(ctx context.Context, cmd, synopsis string, want int, args []string, out io.Writer) error {
	var c config
	fs := newFlags(cmd, synopsis, out)
	storeFlags(fs, &c)
	var pos []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		pos, args = append(pos, args[0]), args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	pos = append(pos, fs.Args()...)
	if len(pos) != want {
		fs.Usage()
		return fmt.Errorf("want %d arguments, got %d", want, len(pos))
	}
	db, forges, err := openForges(ctx, &c)
	if err != nil {
		return err
	}
	defer db.Close()
	agent := ""
	if want == 3 {
		agent = pos[2]
	}
	if err := forges.MapUser(ctx, models.System, forgeName(pos[0]), pos[1], agent); err != nil {
		return describe(err)
	}
	if agent == "" {
		fmt.Fprintf(out, "%s on forge %s no longer acts as an agent\n", pos[1], forgeName(pos[0]))
	} else {
		fmt.Fprintf(out, "%s on forge %s acts as agent %s\n", pos[1], forgeName(pos[0]), agent)
	}
	return nil
}

func runForgeMap(ctx context.Context, args []string, out io.Writer) error {
	return runForgeMapping(ctx, "forge map", "forge map NAME LOGIN AGENT\n\nA review by LOGIN on the forge is AGENT's act, under its roles.", 3, args, out)
}

func runForgeUnmap(ctx context.Context, args []string, out io.Writer) error {
	return runForgeMapping(ctx, "forge unmap", "forge unmap NAME LOGIN", 2, args, out)
}
