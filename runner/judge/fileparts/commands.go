package fileparts

import (
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/countersign/countersign/models/formats/shellword"
)

// ScriptsRun lists the package.json scripts that shell commands run, sorted, each
// with its pre and post hook: `npm test` / `npm t` (test), `npm start|stop|restart`,
// `npm run x` / `npm run-script x`, `npm install|ci|rebuild|...` (the install
// lifecycle scripts: preinstall, install, postinstall, prepare, ...), `pnpm x`,
// `pnpm run x`, `yarn x`, `yarn run x`, `yarn` alone (install), `bun run x`,
// npm-run-all / run-s / run-p arguments (which may be globs such as "lint:*";
// Restore matches those against script names), and concurrently's "npm:x".
//
// It over-approximates rather than misses: commands are split at ; && || | & ( )
// newlines and backquotes, every quoted string is scanned as a command too
// (sh -c "npm test"), a package manager counts wherever it is the command or
// follows wrappers (env, timeout 60, npx, cross-env, FOO=bar, ...), and for pnpm,
// yarn and bun every word after the manager (until --) is taken as a script name.
// A name that is no script at base costs only this: a worker's new script of that
// name is removed, which is right when the command would run it (`yarn jest` runs
// a "jest" script if there is one).
func ScriptsRun(commands []string) []string {
	set := map[string]bool{}
	add := func(n string) {
		if n == "" || strings.ContainsAny(n, " \t\n") {
			return
		}
		set[n], set["pre"+n], set["post"+n] = true, true, true
	}
	for _, c := range commands {
		for _, words := range shellword.Split(c, false) {
			scriptsIn(words, add)
		}
	}
	return setList(set)
}

// TargetsRun lists the Makefile targets shell commands run, sorted: `make test`,
// `make -C dir check lint`, `make -j4 test`, `gmake test`, `$(MAKE) test` in a
// recipe; a make with no target named contributes DefaultGoal, which Restore
// resolves against the base Makefile. Options and their values (-C dir, -f file,
// -j 4, -o file, --eval=...) and VAR=value arguments are not targets. It does not
// say which Makefile a target belongs to (-C, -f): the caller decides which files
// the names apply to, and over-approximating is harmless.
func TargetsRun(commands []string) []string {
	set := map[string]bool{}
	for _, c := range commands {
		for _, words := range shellword.Split(c, false) {
			makeTargetsIn(words, func(t string) { set[t] = true })
		}
	}
	return setList(set)
}

func setList(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// wrappers are commands that run another command given after their own options
// and short arguments.
var wrappers = map[string]bool{
	"env": true, "time": true, "nice": true, "nohup": true, "timeout": true, "exec": true,
	"command": true, "builtin": true, "sudo": true, "doas": true, "xargs": true, "stdbuf": true,
	"unbuffer": true, "xvfb-run": true, "ionice": true, "chronic": true, "npx": true, "pnpx": true,
	"bunx": true, "corepack": true, "poetry": true, "uv": true, "uvx": true, "pipenv": true,
	"hatch": true, "pdm": true, "rye": true, "direnv": true, "dotenv": true, "cross-env": true,
	"env-cmd": true, "run": true, "x": true, "dlx": true, "then": true, "do": true, "else": true,
	"!": true, "{": true, "eval": true, "watch": true, "retry": true, "caffeinate": true, "flock": true,
}

var shortArg = regexp.MustCompile(`^[0-9.]+[smhd]?$|^\.$`)

// commandWords returns the indexes of words in command position: the first word,
// and each word after only environment assignments, options, short numeric
// arguments and wrapper commands.
func commandWords(words []string) []int {
	var out []int
	for i, w := range words {
		out = append(out, i)
		b := path.Base(strings.TrimLeft(w, "@-+"))
		if wrappers[b] || strings.HasPrefix(w, "-") || shortArg.MatchString(w) ||
			(strings.Contains(w, "=") && !strings.HasPrefix(w, "=")) {
			continue
		}
		if b == "npm" || b == "pnpm" || b == "yarn" || b == "bun" {
			continue // `pnpm exec make`, `yarn run-s`: what follows may be a command too
		}
		break
	}
	return out
}

var installLike = map[string]bool{
	"install": true, "i": true, "in": true, "ins": true, "inst": true, "insta": true, "instal": true,
	"isnt": true, "isnta": true, "isntal": true, "isntall": true, "add": true, "ci": true,
	"clean-install": true, "ic": true, "install-clean": true, "isntall-clean": true, "rebuild": true,
	"rb": true, "link": true, "ln": true, "update": true, "up": true, "upgrade": true, "udpate": true,
	"uninstall": true, "remove": true, "rm": true, "r": true, "un": true, "unlink": true,
	"prune": true, "dedupe": true, "ddp": true,
}

var lifecycle = []string{"install", "prepare", "prepublish", "dependencies"}

var publishLike = map[string]bool{"pack": true, "publish": true, "version": true}

var publishScripts = []string{"pack", "prepare", "prepublishOnly", "publish", "version"}

// valueOptions take the next word as their value when not written --opt=value.
var valueOptions = map[string]bool{
	"--prefix": true, "-C": true, "--workspace": true, "-w": true, "--userconfig": true,
	"--globalconfig": true, "--cache": true, "--registry": true, "--script-shell": true,
	"--loglevel": true, "--tag": true, "--otp": true, "--include": true, "--omit": true,
	"--before": true, "--node-options": true, "--cwd": true, "--dir": true, "-F": true,
	"--filter": true, "--filter-prod": true, "--reporter": true, "--config": true,
	"--modules-folder": true, "--workspace-concurrency": true, "--network-concurrency": true,
	"--npm-path": true, "--max-parallel": true,
}

// positionals returns args that are not options or option values, up to "--".
func positionals(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if valueOptions[a] {
				i++
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

func scriptsIn(words []string, add func(string)) {
	addAll := func(ns []string) {
		for _, n := range ns {
			add(n)
		}
	}
	for _, i := range commandWords(words) {
		b := path.Base(words[i])
		rest := words[i+1:]
		switch b {
		case "npm":
			npmScripts(positionals(rest), add, addAll)
		case "pnpm", "yarn", "bun":
			pos := positionals(rest)
			if len(pos) == 0 && b == "yarn" {
				addAll(lifecycle)
			}
			for _, p := range pos {
				switch {
				case p == "t" || p == "tst":
					add("test")
				case installLike[p]:
					addAll(lifecycle)
				case publishLike[p]:
					addAll(publishScripts)
				case p == "run" || p == "run-script":
				default:
					add(p)
				}
			}
		case "npm-run-all", "npm-run-all2", "run-s", "run-p":
			for _, p := range positionals(rest) {
				if f := strings.Fields(p); len(f) > 0 {
					add(f[0])
				}
			}
		}
	}
	for _, w := range words {
		for _, pm := range []string{"npm:", "pnpm:", "yarn:", "bun:"} {
			if strings.HasPrefix(w, pm) {
				if f := strings.Fields(w[len(pm):]); len(f) > 0 {
					add(f[0])
				}
			}
		}
	}
}

func npmScripts(pos []string, add func(string), addAll func([]string)) {
	for k, p := range pos {
		switch p {
		case "test", "t", "tst":
			add("test")
		case "start", "stop":
			add(p)
		case "restart":
			addAll([]string{"restart", "stop", "start"})
		case "run", "run-script", "rum", "urn":
			addAll(pos[k+1:])
		case "install-test", "it", "install-ci-test", "cit":
			addAll(lifecycle)
			add("test")
		default:
			switch {
			case installLike[p]:
				addAll(lifecycle)
			case publishLike[p]:
				addAll(publishScripts)
			default:
				continue // perhaps an option's value: look further
			}
		}
		return
	}
}

// isMakeWord reports whether w runs make: make, gmake, a path to either, or
// $(MAKE) in a recipe; leading recipe prefixes @ - + are ignored.
func isMakeWord(w string) bool {
	w = strings.TrimLeft(w, "@-+")
	switch w {
	case "$(MAKE)", "${MAKE}", "$MAKE", "${MAKE:-make}":
		return true
	}
	switch path.Base(w) {
	case "make", "gmake", "gnumake":
		return true
	}
	return false
}

// makeValueOptions are make's options that take the next word as their value.
var makeValueOptions = map[string]bool{
	"-C": true, "-f": true, "-I": true, "-o": true, "-W": true, "-E": true,
	"--directory": true, "--file": true, "--makefile": true, "--include-dir": true,
	"--old-file": true, "--assume-old": true, "--what-if": true, "--new-file": true,
	"--assume-new": true, "--eval": true, "--jobserver-auth": true, "--jobserver-style": true,
}

var number = regexp.MustCompile(`^[0-9.]+$`)

func makeTargetsIn(words []string, add func(string)) {
	for _, i := range commandWords(words) {
		if !isMakeWord(words[i]) {
			continue
		}
		found := false
		args := words[i+1:]
		opts := true
		for k := 0; k < len(args); k++ {
			a := args[k]
			switch {
			case a == "--" && opts:
				opts = false
				continue
			case opts && (a == "-j" || a == "-l") && k+1 < len(args) && number.MatchString(args[k+1]):
				k++
				continue
			case opts && makeValueOptions[a]:
				k++
				continue
			case opts && strings.HasPrefix(a, "-") && len(a) > 1:
				continue
			case strings.Contains(a, "="):
				continue // VAR=value
			case redirection(a):
				if strings.TrimLeft(a, "0123456789&<>|") == "" {
					k++ // the file name follows
				}
				continue
			}
			add(a)
			found = true
		}
		if !found {
			add(DefaultGoal)
		}
	}
}

var redirectionRe = regexp.MustCompile(`^[0-9]*(<|>|&>)`)

func redirection(w string) bool { return redirectionRe.MatchString(w) }
