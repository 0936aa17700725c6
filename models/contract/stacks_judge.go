package contract

import (
	"fmt"
	"strings"
)

// The judge's environment, per stack: the variables a judged run gets (JudgeEnv) and
// the configuration sources they switch off (ConfigSources). A judged run (verify
// commands, criteria, the floor's base run, held-out tests, deferred checks) starts
// from nothing of the runner's or the worker's: a fresh judge-owned HOME and TMPDIR,
// a fixed PATH of system directories, and only these variables. So a worker that
// writes its home (`go env -w GOFLAGS=…`, a Python user-site hook, `~/.npmrc`)
// configures nothing the judge runs; what the project itself configures (go.work,
// conftest.py, a project .npmrc) is the protected paths' business.

// Placeholders a JudgeEnv value may use; runner/judge.Env replaces them.
const (
	JudgeHome       = "{home}"       // the run's own HOME, fresh per judged run
	JudgeTmp        = "{tmp}"        // the run's own TMPDIR, fresh per judged run
	JudgeEtc        = "{etc}"        // read-only judge-owned files, made empty: {etc}/npmrc
	JudgeGoCache    = "{gocache}"    // the run's Go build cache: a writable layer over the judge's
	JudgeGoModCache = "{gomodcache}" // the judge's Go module cache, read-only in the run
	JudgePySite     = "{pysite}"     // a judge-owned directory holding the judge's sitecustomize.py
)

// judgeDefaults are the default rules' JudgeEnv and ConfigSources, by stack name.
var judgeDefaults = map[string]struct{ env, sources []string }{
	"go": {
		env: []string{"GOENV=off", "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local", "GOPROXY=off",
			"GOCACHE=" + JudgeGoCache, "GOMODCACHE=" + JudgeGoModCache, "GOPATH=" + JudgeHome + "/go"},
		sources: []string{
			"the go env file ($HOME/.config/go/env, written by go env -w): GOENV=off",
			"GOFLAGS: set to -buildvcs=false, whatever the env file or the runner says",
			"GOTOOLCHAIN (a go.mod toolchain line would download one): local",
			"GOPROXY, GONOPROXY, GONOSUMDB, GONOSUMCHECK, GOPRIVATE, GOINSECURE, GOSUMDB: never inherited; GOPROXY=off, the modules come from the judge's cache",
			"GOEXPERIMENT, GODEBUG, GOROOT, CGO_*FLAGS, CC, CXX: never inherited",
			"the build cache (GOCACHE): a writable layer per run over the judge's own cache, so code under test cannot poison a later run",
			"the module cache (GOMODCACHE): the judge's, read-only in the run, filled by the judge's own go mod download before the first attempt",
			"go.work, go.mod replace lines, vendor/: the project's own, the protected paths' business",
		},
	},
	"node": {
		env: []string{"NPM_CONFIG_USERCONFIG=" + JudgeEtc + "/npmrc", "NPM_CONFIG_GLOBALCONFIG=" + JudgeEtc + "/npmrc-global",
			"npm_config_script_shell=/bin/sh", "npm_config_cache=" + JudgeHome + "/.npm",
			"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"},
		sources: []string{
			"npm's user config (~/.npmrc): NPM_CONFIG_USERCONFIG at an empty, read-only judge-owned file",
			"npm's global config ($PREFIX/etc/npmrc): NPM_CONFIG_GLOBALCONFIG at an empty, read-only judge-owned file",
			"npm_config_* and NPM_CONFIG_* variables: never inherited; script-shell pinned to /bin/sh (over a project .npmrc too)",
			"NODE_OPTIONS, NODE_PATH, NODE_EXTRA_CA_CERTS: never inherited",
			"yarn's ~/.yarnrc and pnpm's ~/.config/pnpm: in the judge's fresh home",
			"pre- and post-scripts still run (ignore-scripts would stop a legitimate pretest build): package.json#scripts is protected",
			"a project .npmrc, .yarnrc*: the project's own, the protected paths' business",
		},
	},
	"python": {
		env: []string{"PYTHONNOUSERSITE=1", "PYTHONSAFEPATH=1", "PYTHONPATH=" + JudgePySite, "PYTHONUSERBASE=" + JudgeHome + "/.local",
			"PYTHONDONTWRITEBYTECODE=1", "PIP_CONFIG_FILE=/dev/null"},
		sources: []string{
			"the user site (~/.local/lib/pythonX.Y/site-packages: .pth files, usercustomize.py): PYTHONNOUSERSITE=1",
			"the current directory first on sys.path (python -m pytest): PYTHONSAFEPATH=1; the judge's sitecustomize.py appends the judged directory last, so project modules import but cannot shadow installed ones",
			"PYTHONPATH (the judge's), PYTHONHOME, PYTHONSTARTUP, PYTHONINSPECT, PYTHONWARNINGS, PYTHONBREAKPOINT: never inherited",
			"PYTEST_ADDOPTS, PYTEST_PLUGINS: never inherited; plugin autoload stays on (installed plugins are the system's, and projects need theirs)",
			"bytecode: PYTHONDONTWRITEBYTECODE=1 and a fresh PYTHONPYCACHEPREFIX per run",
			"pip: PIP_CONFIG_FILE=/dev/null, PIP_* never inherited",
			"conftest.py, pytest.ini, pyproject.toml [tool.pytest]: the project's own, the protected paths' business",
		},
	},
	"rust": {
		env: []string{"CARGO_HOME=" + JudgeHome + "/.cargo", "CARGO_TARGET_DIR=" + JudgeTmp + "/cargo-target", "CARGO_NET_OFFLINE=true"},
		sources: []string{
			"cargo's home config ($CARGO_HOME/config.toml, ~/.cargo): CARGO_HOME in the judge's fresh home",
			"RUSTFLAGS, RUSTC_WRAPPER, RUSTC, RUSTUP_TOOLCHAIN, CARGO_* variables: never inherited",
			"the target dir: the run's own TMPDIR, never the worker's target/",
			".cargo/config.toml in the project: the project's own, the protected paths' business",
		},
	},
	"make": {
		sources: []string{
			"MAKEFLAGS, MFLAGS, GNUMAKEFLAGS, MAKEFILES (makefiles read first), MAKELEVEL: never inherited",
			"Makefile targets the contract runs: the project's own, the protected paths' business",
		},
	},
}

// withJudgeEnv fills the default stacks' JudgeEnv and ConfigSources.
func withJudgeEnv(stacks []Stack) []Stack {
	for i := range stacks {
		if d, ok := judgeDefaults[stacks[i].Name]; ok {
			stacks[i].JudgeEnv = append([]string(nil), d.env...)
			stacks[i].ConfigSources = append([]string(nil), d.sources...)
		}
	}
	return stacks
}

// JudgeEnvDoc renders the stacks' judge environment as Markdown, one section per
// stack with what it sets and the configuration sources it switches off: the
// documentation of the default rules (docs/judge-environment.md) is this, rendered.
func JudgeEnvDoc(stacks []Stack) string {
	var b strings.Builder
	for _, st := range stacks {
		if len(st.JudgeEnv) == 0 && len(st.ConfigSources) == 0 && len(st.JudgeConnect) == 0 {
			continue
		}
		fmt.Fprintf(&b, "### %s\n\n", st.Name)
		if len(st.JudgeEnv) > 0 {
			b.WriteString("Sets: `" + strings.Join(st.JudgeEnv, "`, `") + "`.\n\n")
		}
		if len(st.JudgeConnect) > 0 {
			fmt.Fprintf(&b, "May connect to TCP ports %v.\n\n", st.JudgeConnect)
		}
		for _, s := range st.ConfigSources {
			b.WriteString("- " + s + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}
