package judge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/countersign/countersign/models"
)

// Store is the judge's own bare git repository, <root>/judge/git: every candidate and
// base snapshot lives there, and everything the judge reads of a worker's result is
// read from there, never from the worker's repository.
//
// Why a repository of its own: a worker can write the git directory of the repository
// it works in (its objects, refs, and — outside the sandbox, or through a checkout's
// own .git — its config and hooks). A `filter.<name>.clean` in that config runs a
// program during `git add`; `core.fsmonitor` runs one on every status; a replaced or
// corrupted object changes what an id means. The store's config is written by the
// judge alone (gc.auto=0, no hooks, no fsmonitor, no untracked cache or split index,
// objects checked on receipt, no filter drivers: a `.gitattributes` in the worker's
// tree can name a driver, but none is defined, so nothing runs), and every command the
// judge runs names it with --git-dir, so no repository's config is ever read.
//
// The commands run unconfined, as the runner: they only read the workspace as data
// (git stores a symbolic link as a link and never follows one out of the tree), in
// an environment built from nothing: no system or global configuration, HOME a
// judge-owned directory, no GIT_* variable inherited from the runner.
//
// A Store is safe for concurrent use; Close stops the blob reader Blob keeps open.
type Store struct {
	root   string // <data>/judge
	gitDir string // <data>/judge/git

	mu    sync.Mutex
	batch *catBatch // cat-file --batch, started by the first Blob
}

var _ Trees = (*Store)(nil)

// storeConfig is the configuration the judge writes into its store, in order.
var storeConfig = [][2]string{
	{"gc.auto", "0"},
	// Tasks snapshot at once: a ref lock held by another snapshot is waited for.
	{"core.filesRefLockTimeout", "10000"},
	{"core.packedRefsTimeout", "10000"},
	{"maintenance.auto", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.fsmonitor", "false"},
	{"core.untrackedCache", "false"},
	{"core.splitIndex", "false"},
	{"core.excludesFile", "/dev/null"},
	{"core.attributesFile", "/dev/null"},
	{"core.commitGraph", "false"},
	{"core.symlinks", "true"},
	{"core.autocrlf", "false"},
	{"core.safecrlf", "false"},
	{"core.fileMode", "true"},
	{"core.trustctime", "true"},
	{"core.checkStat", "default"},
	{"index.version", "2"},
	{"core.ignoreCase", "false"},
	{"core.precomposeUnicode", "false"},
	{"core.protectNTFS", "true"},
	{"transfer.fsckObjects", "true"},
	{"fetch.fsckObjects", "true"},
	{"protocol.version", "2"},
	{"protocol.allow", "never"},
	{"protocol.file.allow", "always"},
	{"commit.gpgSign", "false"},
	{"index.skipHash", "false"},
}

// OpenStore opens the judge's store under the data dir root, creating <root>/judge/git
// with `git init --bare` and the judge's configuration on first use. The
// configuration is written again on every open whose settings differ from the recorded
// ones (writeConfig), so a store made by an older version
// gets the current settings.
func OpenStore(ctx context.Context, root string) (*Store, error) {
	if root == "" {
		return nil, models.Errorf(models.EINVALID, "the judge's store needs a data directory")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	s := &Store{root: filepath.Join(abs, "judge"), gitDir: filepath.Join(abs, "judge", "git")}
	for _, d := range []string{s.root, s.home(), s.tmpRoot()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(s.gitDir, "HEAD")); errors.Is(err, os.ErrNotExist) {
		if _, err := s.git(ctx, gitCmd{args: []string{"init", "-q", "--bare", "--object-format=sha1", s.gitDir}, noGitDir: true}); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if err := s.writeConfig(ctx); err != nil {
		return nil, err
	}
	// git init writes sample hooks and an info/exclude; neither is ever read (hooks
	// are off, and no command of the judge's asks for the standard excludes), but an
	// empty info/exclude leaves nothing to wonder about.
	if err := os.WriteFile(filepath.Join(s.gitDir, "info", "exclude"), nil, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := s.writeAttributes(); err != nil {
		return nil, err
	}
	s.removeStaleLocks(time.Minute)
	return s, nil
}

// storeAttributes are the store's own attributes, which outrank every .gitattributes
// in a worker's tree ($GIT_DIR/info/attributes has the highest precedence): no
// attribute may transform a file on its way into a snapshot. `text`/`eol` would
// rewrite line endings, `ident` would collapse $Id$, `working-tree-encoding` would
// re-encode, `filter` would name a driver (none is defined, but none is named either).
// A snapshot holds the bytes on disk, exactly.
const storeAttributes = "* -text -eol -ident -filter -working-tree-encoding\n"

// keepWorkerAttributes is a test-only switch that leaves the store's attributes out,
// to show what they defend.
var keepWorkerAttributes = false

func (s *Store) writeAttributes() error {
	p := filepath.Join(s.gitDir, "info", "attributes")
	if keepWorkerAttributes {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(storeAttributes), 0o600)
}

// GitDir is the store's git directory.
func (s *Store) GitDir() string { return s.gitDir }

// home is the HOME every judge git command gets: a directory of the judge's, empty.
func (s *Store) home() string { return filepath.Join(s.root, "home") }

// tmpRoot holds each operation's private files (an index, a pack), out of every
// worker's reach.
func (s *Store) tmpRoot() string { return filepath.Join(s.root, "tmp") }

// Close stops the blob reader; the store stays usable (the next Blob starts another).
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.batch != nil {
		s.batch.close()
		s.batch = nil
	}
	return nil
}

// gitCmd is one git command of the judge's.
type gitCmd struct {
	args     []string  // after --git-dir
	dir      string    // working directory ("" = the store's root)
	env      []string  // KEY=VALUE beyond the judge's environment
	stdin    io.Reader // nil = no input
	stdout   io.Writer // receives standard output instead of the returned slice
	noGitDir bool      // git init, git config --file: no --git-dir
	// whole: the command takes a lock in the store (a ref, the shallow file), so it
	// is never killed halfway when ctx ends; a killed one would leave the lock behind
	// and every later snapshot would fail on it.
	whole bool
}

// env is the environment every judge git command runs with, built from nothing:
// nothing the runner inherited reaches git (no GIT_DIR, GIT_INDEX_FILE,
// GIT_CONFIG_PARAMETERS, GIT_EXEC_PATH, ...), no system or global configuration is
// read, and HOME and XDG_CONFIG_HOME are the judge's, so no user-level ignore or
// attributes file is either.
func (s *Store) env(extra []string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return append([]string{
		"PATH=" + path,
		"HOME=" + s.home(),
		"XDG_CONFIG_HOME=" + s.home(),
		"LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_OPTIONAL_LOCKS=0",
	}, extra...)
}

// git runs one command with exec.CommandContext (killed when ctx ends) and returns
// its standard output; a non-zero exit is an error carrying the end of its stderr.
func (s *Store) git(ctx context.Context, c gitCmd) ([]byte, error) {
	argv := c.args
	if !c.noGitDir {
		argv = append([]string{"--git-dir=" + s.gitDir}, argv...)
	}
	if c.whole {
		ctx = context.WithoutCancel(ctx)
	}
	cmd := exec.CommandContext(ctx, "git", argv...)
	// git runs helpers of its own (fetch starts upload-pack): a process group of its
	// own, killed whole when ctx ends, leaves none of them behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = s.env(c.env)
	cmd.Dir = c.dir
	if cmd.Dir == "" {
		cmd.Dir = s.root
	}
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	if c.stdout != nil {
		cmd.Stdout = c.stdout
	}
	cmd.Stderr = &limitedBuffer{buf: &errb, max: 4 << 10}
	cmd.Stdin = c.stdin
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("judge: git %s: %w", c.args[0], context.Cause(ctx))
		}
		return out.Bytes(), &gitError{args: c.args, err: err, stderr: strings.TrimSpace(errb.String())}
	}
	return out.Bytes(), nil
}

// gitError is a judge git command that failed.
type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	what := strings.Join(e.args, " ")
	if len(what) > 200 {
		what = what[:200] + "…"
	}
	return fmt.Sprintf("judge: git %s: %v: %s", what, e.err, e.stderr)
}

func (e *gitError) Unwrap() error { return e.err }

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// oidPattern matches a full SHA-1 object id, the store's format.
var oidPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// checkID refuses anything that is not a full lower-case SHA-1 id: ids reach git as
// arguments and must never be read as options or revision expressions.
func checkOID(field, id string) error {
	if !oidPattern.MatchString(id) {
		return &models.Error{Code: models.EINVALID, Message: fmt.Sprintf("%s %q is not a full object id", field, id),
			Fields: map[string]string{field: "must be 40 lower-case hex digits"}}
	}
	return nil
}

// emptyTreeID is the id of the tree with no entries (SHA-1).
const emptyTreeID = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// Changes implements Trees: `git diff-tree -r` between the trees of commits from and
// to ("" for from is the empty tree), without rename detection, sorted by path.
func (s *Store) Changes(ctx context.Context, from, to string) ([]Change, error) {
	if err := checkOID("to", to); err != nil {
		return nil, err
	}
	fromArg := emptyTreeID
	if from != "" {
		if err := checkOID("from", from); err != nil {
			return nil, err
		}
		fromArg = from + "^{tree}"
	}
	out, err := s.git(ctx, gitCmd{args: []string{"diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", "--no-abbrev", "--no-ext-diff", "--no-textconv", fromArg, to + "^{tree}"}})
	if err != nil {
		return nil, err
	}
	return parseRawDiff(out)
}

// parseRawDiff reads `git diff-tree -r -z` raw output:
// ":<old mode> <new mode> <old id> <new id> <status>\0<path>\0" per change.
func parseRawDiff(out []byte) ([]Change, error) {
	var cs []Change
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		meta := string(fields[i])
		f := strings.Fields(strings.TrimPrefix(meta, ":"))
		if len(f) != 5 {
			return nil, fmt.Errorf("judge: unexpected diff-tree line %q", meta)
		}
		om, err1 := strconv.ParseUint(f[0], 8, 32)
		nm, err2 := strconv.ParseUint(f[1], 8, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("judge: unexpected modes in %q", meta)
		}
		c := Change{Path: string(fields[i+1]), OldMode: uint32(om), NewMode: uint32(nm), OldBlob: f[2], NewBlob: f[3]}
		if om == 0 {
			c.OldBlob = ""
		}
		if nm == 0 {
			c.NewBlob = ""
		}
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Path < cs[j].Path })
	return cs, nil
}

// Blob implements Trees. It asks one `git cat-file --batch` that stays open between
// calls: a view of 1,000 changed files would otherwise start 1,000 processes (see
// BenchmarkBlob). The reader is restarted if it ever fails.
func (s *Store) Blob(ctx context.Context, id string) ([]byte, error) {
	if err := checkOID("blob", id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.batch == nil {
		b, err := s.startBatch()
		if err != nil {
			return nil, err
		}
		s.batch = b
	}
	data, err := s.batch.read(id)
	if err != nil && models.ErrorCode(err) == models.EINTERNAL {
		// Not an answer about the id (a missing object, a tree): the reader itself
		// failed and its stream can no longer be trusted to be in step.
		s.batch.close()
		s.batch = nil
	}
	return data, err
}

// notFoundError is an id the store does not hold as a blob.
type notFoundError struct{ id, kind string }

func (e *notFoundError) Error() string {
	if e.kind != "" {
		return fmt.Sprintf("object %s is a %s, not a blob", e.id, e.kind)
	}
	return fmt.Sprintf("object %s is not in the judge's store", e.id)
}

// catBatch is a running `git cat-file --batch`.
type catBatch struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	in     io.WriteCloser
	out    *bufio.Reader
}

func (s *Store) startBatch() (*catBatch, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "git", "--git-dir="+s.gitDir, "cat-file", "--batch")
	cmd.Env = s.env(nil)
	cmd.Dir = s.root
	in, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	return &catBatch{cmd: cmd, cancel: cancel, in: in, out: bufio.NewReaderSize(out, 64<<10)}, nil
}

func (b *catBatch) read(id string) ([]byte, error) {
	if _, err := io.WriteString(b.in, id+"\n"); err != nil {
		return nil, fmt.Errorf("judge: cat-file: %w", err)
	}
	head, err := b.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("judge: cat-file: %w", err)
	}
	f := strings.Fields(head)
	if len(f) == 2 && f[1] == "missing" {
		return nil, models.Errorf(models.ENOTFOUND, "%v", &notFoundError{id: id})
	}
	if len(f) != 3 {
		return nil, fmt.Errorf("judge: cat-file: unexpected header %q", head)
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("judge: cat-file: unexpected header %q", head)
	}
	data := make([]byte, n+1) // the content and a newline
	if _, err := io.ReadFull(b.out, data); err != nil {
		return nil, fmt.Errorf("judge: cat-file: %w", err)
	}
	if f[1] != "blob" {
		return nil, models.Errorf(models.EINVALID, "%v", &notFoundError{id: id, kind: f[1]})
	}
	return data[:n], nil
}

func (b *catBatch) close() {
	b.in.Close()
	b.cancel()
	_ = b.cmd.Wait()
}

// removeStaleLocks removes the lock files (a ref's, packed-refs', shallow's) that a
// runner killed in the middle of a ref update left in the store, once they are older
// than age: no live git command holds a lock that long, and a left one would fail
// every later update of that ref.
func (s *Store) removeStaleLocks(age time.Duration) {
	_ = filepath.WalkDir(s.gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && p != s.gitDir && d.Name() == "objects" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".lock") {
			if fi, err := d.Info(); err == nil && time.Since(fi.ModTime()) > age {
				_ = os.Remove(p)
			}
		}
		return nil
	})
}

// writeConfig writes storeConfig into the store's config, one git config call per
// setting, unless the config already records (countersign.config) a digest of this
// very storeConfig: a runner's start then costs one git call, not one per setting.
func (s *Store) writeConfig(ctx context.Context) error {
	file := filepath.Join(s.gitDir, "config")
	h := sha256.New()
	for _, kv := range storeConfig {
		fmt.Fprintf(h, "%s=%s\n", kv[0], kv[1])
	}
	want := hex.EncodeToString(h.Sum(nil))
	if out, err := s.git(ctx, gitCmd{noGitDir: true, args: []string{"config", "--file", file, "countersign.config"}}); err == nil && strings.TrimSpace(string(out)) == want {
		return nil
	}
	for _, kv := range append(slices.Clone(storeConfig), [2]string{"countersign.config", want}) {
		if _, err := s.git(ctx, gitCmd{args: []string{"config", "--file", file, kv[0], kv[1]}, noGitDir: true}); err != nil {
			return err
		}
	}
	return nil
}
