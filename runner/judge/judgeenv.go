package judge

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/countersign/countersign/models/contract"
)

// The judge's environment.
//
// Every judged run (verify commands, criteria, the floor's base run, held-out tests,
// deferred checks) starts from nothing the worker wrote and nothing of the runner's
// own environment but the few variables listed in inheritKeys: a fresh HOME and
// TMPDIR per run under a judge-owned root, a fixed PATH of system directories, XDG
// and git configuration pointed at the judge, and each stack's JudgeEnv (models.Stack)
// switching its tools' user configuration off. A worker that poisons its own home
// (`go env -w GOFLAGS=…`, a Python user-site hook, `~/.npmrc`) changes nothing here.
//
// Caches. Decision, by measurement on this machine (2 cores, loaded): `go test` of a
// one-package module takes 78 s with an empty build cache, 6 s with a warm one, and
// 8.5 s with a per-run overlay over a warm one (mount and unmount cost milliseconds).
// A shared, writable GOCACHE is not safe: the code under test runs inside `go test`
// and could write entries (Go trusts an output file by its action ID and does not
// re-hash it on read) that a later run, of another task, would link or report as a
// cached pass. So each run's GOCACHE is an overlay: the judge's shared cache read-only
// below, a per-run layer above, thrown away with the run. The shared cache is written
// only by the judge's own compile-only warm-up (go test -exec=/bin/true: nothing of
// the project runs). Where the overlay cannot be mounted (no CAP_SYS_ADMIN) a
// confined run gets an empty GOCACHE of its own: slow, never poisoned; an unconfined
// one (the sandbox off) the shared cache itself, which nothing protects then anyway. The module cache
// (GOMODCACHE) is the judge's, read-only in the run (see Readable), filled by the
// judge's own `go mod download` before the first attempt, with GOPROXY=off in the
// run: a module the judge did not download is missing, never fetched by the worker's
// code.

// DefaultPath is the judged runs' PATH before filtering: system directories only.
var DefaultPath = []string{"/usr/local/go/bin", "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// inheritKeys are the only runner variables a judged run sees: locale, time zone, who.
var inheritKeys = []string{"LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME"}

// reservedKeys are the judge's own; a stack's JudgeEnv cannot set them.
var reservedKeys = []string{"PATH", "HOME", "TMPDIR"}

// EnvOptions says where a judged run's environment lives and what it judges.
type EnvOptions struct {
	// Root is the judge-owned root (under the runner's data dir, out of every
	// worker's reach): runs/<id> per judged run, gocache and gomodcache shared.
	Root string
	// Dir is the directory being judged; no PATH entry lies inside it.
	Dir string
	// Stacks are the project rules' stacks: their JudgeEnv and JudgeConnect apply.
	Stacks []contract.Stack
	// Path are the PATH candidates (DefaultPath when nil), filtered by JudgePath.
	Path []string
	// Untrusted are hierarchies a worker may write (the workspaces root, agents'
	// extra write paths): no PATH entry lies inside them.
	Untrusted []string
	// GoCache is the judge's shared Go build cache, the read-only layer of each run's
	// GOCACHE (Root/gocache when empty).
	GoCache string
	// Unconfined says the run is not sandboxed: where no overlay can be mounted its
	// GOCACHE is the shared cache itself rather than an empty one, since nothing keeps
	// an unconfined run from writing the shared cache anyway.
	Unconfined bool
}

// Env is one judged run's environment. Close it when the run is done.
type Env struct {
	Run        string // the run's own directory: home, tmp, etc, pysite, gocache
	Home, Tmp  string // writable, fresh
	Etc        string // read-only judge-owned files ({etc})
	PySite     string // the judge's sitecustomize.py ({pysite})
	GoCache    string // the run's GOCACHE, writable
	GoModCache string // the judge's module cache, read-only in the run
	// Overlay says GoCache is a layer over the shared cache; false: an empty one.
	Overlay bool
	// Ports are the TCP ports the run may connect to: the stacks' JudgeConnect.
	Ports []uint16
	// Path are the directories on the run's PATH.
	Path []string
	vars []string
}

// NewEnv makes a fresh judged run's environment under opt.Root.
func NewEnv(opt EnvOptions) (*Env, error) {
	if !filepath.IsAbs(opt.Root) || !filepath.IsAbs(opt.Dir) {
		return nil, fmt.Errorf("judge env: root %q and dir %q must be absolute", opt.Root, opt.Dir)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	run := filepath.Join(opt.Root, "runs", hex.EncodeToString(id[:]))
	e := &Env{Run: run, Home: filepath.Join(run, "home"), Tmp: filepath.Join(run, "tmp"), Etc: filepath.Join(run, "etc"),
		PySite: filepath.Join(run, "pysite"), GoCache: filepath.Join(run, "gocache"), GoModCache: ModCache(opt.Root)}
	for _, d := range []string{e.Home, e.Tmp, e.Etc, e.PySite, e.GoModCache} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(e.PySite, "sitecustomize.py"), []byte(sitecustomize), 0o640); err != nil {
		_ = os.RemoveAll(run)
		return nil, err
	}
	e.Path = JudgePath(PathCandidates(opt.Path), append([]string{opt.Dir}, opt.Untrusted...))
	e.vars = e.baseVars(e.Path)
	usesGoCache := false
	for _, st := range opt.Stacks {
		for _, kv := range st.JudgeEnv {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || slices.Contains(reservedKeys, k) {
				continue
			}
			usesGoCache = usesGoCache || strings.Contains(v, contract.JudgeGoCache)
			if err := e.makeEtcFiles(v); err != nil {
				_ = os.RemoveAll(run)
				return nil, err
			}
			e.vars = setVar(e.vars, k, e.expand(v))
		}
		for _, p := range st.JudgeConnect {
			if p > 0 && p <= 65535 && !slices.Contains(e.Ports, uint16(p)) {
				e.Ports = append(e.Ports, uint16(p))
			}
		}
	}
	if usesGoCache {
		shared := opt.GoCache
		if shared == "" {
			shared = SharedGoCache(opt.Root)
		}
		if err := e.mountGoCache(shared); err != nil {
			_ = os.RemoveAll(run)
			return nil, err
		}
		if !e.Overlay && opt.Unconfined {
			e.GoCache = shared
			e.vars = setVar(e.vars, "GOCACHE", shared)
		}
	}
	return e, nil
}

// SharedGoCache is the judge's shared Go build cache under root.
func SharedGoCache(root string) string { return filepath.Join(root, "gocache") }

// ModCache is the judge's Go module cache under root.
func ModCache(root string) string { return filepath.Join(root, "gomodcache") }

// Vars is the run's whole environment, KEY=VALUE, for an exact environment.
func (e *Env) Vars() []string { return slices.Clone(e.vars) }

// Writable are the hierarchies the run writes besides the judged directory.
func (e *Env) Writable() []string { return []string{e.Home, e.Tmp, e.GoCache} }

// Readable are the hierarchies the run reads but must not write: the judge-owned ones
// and the directories on its PATH.
func (e *Env) Readable() []string {
	return append([]string{e.Etc, e.PySite, e.GoModCache}, e.Path...)
}

// Close unmounts the run's build cache layer and removes the run's directory.
func (e *Env) Close() error {
	if e.Overlay {
		if err := unix.Unmount(e.GoCache, unix.MNT_DETACH); err != nil && err != unix.EINVAL {
			return fmt.Errorf("judge env: unmounting %s: %w", e.GoCache, err)
		}
		e.Overlay = false
	}
	return os.RemoveAll(e.Run)
}

// baseVars are the variables every judged run gets, whatever its stacks.
func (e *Env) baseVars(path []string) []string {
	vars := []string{"PATH=" + strings.Join(path, ":"), "HOME=" + e.Home, "TMPDIR=" + e.Tmp,
		"XDG_CONFIG_HOME=" + e.Home + "/.config", "XDG_CACHE_HOME=" + e.Home + "/.cache",
		"XDG_DATA_HOME=" + e.Home + "/.local/share", "XDG_STATE_HOME=" + e.Home + "/.local/state",
		// git: no system or global configuration, never a prompt.
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"}
	for _, k := range inheritKeys {
		if v, ok := os.LookupEnv(k); ok {
			vars = append(vars, k+"="+v)
		}
	}
	return vars
}

// expand replaces the placeholders of a JudgeEnv value with the run's places.
func (e *Env) expand(v string) string {
	return strings.NewReplacer(contract.JudgeHome, e.Home, contract.JudgeTmp, e.Tmp, contract.JudgeEtc, e.Etc,
		contract.JudgeGoCache, e.GoCache, contract.JudgeGoModCache, e.GoModCache, contract.JudgePySite, e.PySite).Replace(v)
}

// makeEtcFiles makes, empty, each {etc}/name file a value names: a configuration file
// the run reads (npm's user config) and cannot write.
func (e *Env) makeEtcFiles(v string) error {
	for _, part := range strings.Split(v, ":") {
		name, ok := strings.CutPrefix(part, contract.JudgeEtc+"/")
		if !ok {
			continue
		}
		p := filepath.Join(e.Etc, filepath.Clean("/"+name))
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(p, nil, 0o640); err != nil {
			return err
		}
	}
	return nil
}

// mountGoCache makes the run's GOCACHE an overlay over shared, or an empty directory
// when no overlay can be mounted here.
func (e *Env) mountGoCache(shared string) error {
	if err := os.MkdirAll(e.GoCache, 0o750); err != nil {
		return err
	}
	if err := os.MkdirAll(shared, 0o750); err != nil {
		return err
	}
	upper, work := filepath.Join(e.Run, ".gocache-upper"), filepath.Join(e.Run, ".gocache-work")
	if strings.ContainsAny(shared+upper+work, ",:\\") {
		return nil // overlayfs options cannot name these paths: an empty cache
	}
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	opts := "lowerdir=" + shared + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", e.GoCache, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err == nil {
		e.Overlay = true
	}
	return nil
}

// JudgePath is cands without the directories a worker might have written: each must
// exist, be absolute, lie outside every untrusted hierarchy (after symbolic links are
// resolved: what the sandbox lets a worker write), and neither it nor a directory
// above it may be writable by group or others (unless sticky, like /tmp). The first
// of two entries naming the same directory is kept.
func JudgePath(cands, untrusted []string) []string {
	var bad []string
	for _, u := range untrusted {
		if u == "" {
			continue
		}
		bad = append(bad, filepath.Clean(u))
		if r, err := filepath.EvalSymlinks(u); err == nil {
			bad = append(bad, r)
		}
	}
	var out, seen []string
	for _, c := range cands {
		if !filepath.IsAbs(c) {
			continue
		}
		r, err := filepath.EvalSymlinks(c)
		if err != nil || slices.Contains(seen, r) || !trustedDir(r) {
			continue
		}
		if slices.ContainsFunc(bad, func(b string) bool { return within(filepath.Clean(c), b) || within(r, b) }) {
			continue
		}
		seen = append(seen, r)
		out = append(out, filepath.Clean(c))
	}
	return out
}

// trustedDir reports whether dir is a directory that neither it nor any directory
// above it lets group or others write.
func trustedDir(dir string) bool {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		// A sticky directory (/tmp) lets no one rename what another user owns.
		fi, err := os.Stat(d)
		if err != nil || (fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0) {
			return false
		}
		if d == "/" {
			return true
		}
	}
}

// within reports whether p is root or lies below it.
func within(p, root string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// PathCandidates are the directories a judged run's PATH may name before JudgePath
// filters them: p, or DefaultPath when p is nil.
func PathCandidates(p []string) []string {
	if p == nil {
		return DefaultPath
	}
	return p
}

// setVar sets k to v in vars, replacing an earlier value.
func setVar(vars []string, k, v string) []string {
	vars = slices.DeleteFunc(vars, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
	return append(vars, k+"="+v)
}

// sitecustomize is the judge's: with PYTHONSAFEPATH the current directory is not put
// first on sys.path (where a worker's pytest.py would shadow the real one); it is put
// last, so the project's own modules still import as with `python -m`, never ahead of
// installed ones.
const sitecustomize = `# The judge's sitecustomize (Countersign): the working directory goes last on sys.path.
import os as _os, sys as _sys
try:
    _cwd = _os.getcwd()
    if _cwd not in _sys.path:
        _sys.path.append(_cwd)
except OSError:
    pass
`

// LookPath finds name in the run's PATH, as a judged shell would: "" when absent.
func (e *Env) LookPath(name string) string {
	for _, kv := range e.vars {
		if path, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, d := range filepath.SplitList(path) {
				p := filepath.Join(d, name)
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
					return p
				}
			}
		}
	}
	return ""
}
