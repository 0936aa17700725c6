package workspace

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/countersign/countersign/models"
)

// Compare counts the commits branch has that target lacks (ahead) and those target has
// that branch lacks (behind). Both are branch names or full commit ids. Confined, git
// only reads the checkout.
func (m *Manager) Compare(ctx context.Context, repo, target, branch string) (ahead, behind int, err error) {
	t, b, repo, err := twoRevs(repo, target, branch)
	if err != nil {
		return 0, 0, err
	}
	out, err := m.run(ctx, gitRun{dir: repo, read: []string{repo},
		args: []string{"rev-list", "--left-right", "--count", t + "..." + b, "--"}})
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("git rev-list --count printed %q", out)
	}
	if behind, err = strconv.Atoi(f[0]); err == nil {
		ahead, err = strconv.Atoi(f[1])
	}
	return ahead, behind, err
}

// twoRevs validates two revisions and the checkout, before any git runs.
func twoRevs(repo, a, b string) (string, string, string, error) {
	var fe models.FieldErrors
	ra, err := revArg(a)
	if err != nil {
		fe.Add("base", err.Error())
	}
	rb, err := revArg(b)
	if err != nil {
		fe.Add("branch", err.Error())
	}
	if err := fe.Err(); err != nil {
		return "", "", "", err
	}
	real, err := repoDir(repo)
	return ra, rb, real, err
}

// Diff returns the changes from base to branch (both branch names or full commit ids)
// as a unified diff, cut after limit bytes (truncated then says so). It is the task's
// work when base is the task's base commit. No external diff or textconv program runs.
// Confined, git only reads the checkout.
func (m *Manager) Diff(ctx context.Context, repo, base, branch string, limit int) (diff string, truncated bool, err error) {
	if limit <= 0 {
		return "", false, models.Errorf(models.EINVALID, "the diff needs a positive limit")
	}
	a, b, repo, err := twoRevs(repo, base, branch)
	if err != nil {
		return "", false, err
	}
	w := &limitWriter{max: limit}
	if _, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, stdout: w,
		args: []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", a, b, "--"}}); err != nil {
		return "", false, err
	}
	return string(w.buf), w.cut, nil
}

// limitWriter keeps the first max bytes written to it and drops the rest.
type limitWriter struct {
	buf []byte
	max int
	cut bool
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if room := w.max - len(w.buf); room < len(p) {
		w.buf = append(w.buf, p[:max(room, 0)]...)
		w.cut = true
	} else {
		w.buf = append(w.buf, p...)
	}
	return len(p), nil
}

// Push pushes refspec to remote, a remote configured in repo (its name, as
// --push-remote gives it). The refspec is "<src>[:<dst>]" where each side is a branch
// name or refs/heads/<name>, with an optional leading '+' to force; anything else is
// refused with EINVALID before git runs. Confined, git reads the checkout, writes its
// refs and reflogs (remote-tracking branches) and, for a remote that is a local path,
// that repository; a network remote may be reached on the port its URL names (443,
// 80, 22 or 9418 by scheme). Credentials are not part of that: the runner's home and
// global configuration are out of reach, so a remote that needs a key or a credential
// helper fails confined.
func (m *Manager) Push(ctx context.Context, repo, remote, refspec string) error {
	var fe models.FieldErrors
	if !ValidRemote(remote) {
		fe.Add("remote", "must be the name of a configured remote")
	}
	spec, err := pushSpec(refspec)
	if err != nil {
		fe.Add("refspec", err.Error())
	}
	if err := fe.Err(); err != nil {
		return err
	}
	repo, err = repoDir(repo)
	if err != nil {
		return err
	}
	gitDir, err := repoGitDir(repo)
	if err != nil {
		return err
	}
	out, err := m.run(ctx, gitRun{dir: repo, read: []string{repo}, args: []string{"remote", "get-url", "--push", "--", remote}})
	if err != nil {
		return models.Errorf(models.EINVALID, "remote %q is not configured in %s", remote, repo)
	}
	u := strings.TrimSpace(string(out))
	r := gitRun{dir: repo, read: []string{repo}, write: []string{filepath.Join(gitDir, "refs"), filepath.Join(gitDir, "logs")},
		args: []string{"-c", "protocol.ext.allow=never", "push", "--porcelain", "--no-verify", "--", remote, spec}}
	if local, ok := localRemote(u, repo); ok {
		r.write = append(r.write, local)
	} else if port := remotePort(u); port != 0 {
		r.ports = []uint16{port}
	}
	if _, err := m.run(ctx, r); err != nil {
		return fmt.Errorf("push %s to %s: %w", spec, remote, err)
	}
	return nil
}

// ValidRemote reports whether s can name a configured remote for Push: letters,
// digits, '.', '_' and '-', not starting with '-' or '.', without "..", at most 100
// bytes.
func ValidRemote(s string) bool {
	if s == "" || len(s) > 100 || s[0] == '-' || s[0] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// pushSpec validates a refspec and returns it with both sides as full refs.
func pushSpec(s string) (string, error) {
	if s == NotesRef {
		return NotesRef + ":" + NotesRef, nil // the attestations' notes, never forced
	}
	force := strings.HasPrefix(s, "+")
	s = strings.TrimPrefix(s, "+")
	src, dst, hasDst := strings.Cut(s, ":")
	if !hasDst {
		dst = src
	}
	side := func(p string) (string, error) {
		name := strings.TrimPrefix(p, "refs/heads/")
		if err := ValidBranch(name); err != nil {
			return "", fmt.Errorf("%q is not a branch", p)
		}
		return "refs/heads/" + name, nil
	}
	a, err := side(src)
	if err != nil {
		return "", err
	}
	b, err := side(dst)
	if err != nil {
		return "", err
	}
	spec := a + ":" + b
	if force {
		spec = "+" + spec
	}
	return spec, nil
}

// localRemote returns the directory a remote URL names when it is a local path
// (absolute, relative to repo, or file://).
func localRemote(u, repo string) (string, bool) {
	if p, ok := strings.CutPrefix(u, "file://"); ok {
		u = p
	}
	if strings.Contains(u, "://") || (strings.Contains(u, ":") && !strings.Contains(strings.SplitN(u, ":", 2)[0], "/")) {
		return "", false // a URL, or scp-like host:path
	}
	if !filepath.IsAbs(u) {
		u = filepath.Join(repo, u)
	}
	if real, err := filepath.EvalSymlinks(u); err == nil {
		u = real
	}
	return filepath.Clean(u), true
}

// remotePort is the TCP port a network remote's URL reaches; 0 when unknown.
func remotePort(u string) uint16 {
	if !strings.Contains(u, "://") {
		return 22 // scp-like user@host:path is ssh
	}
	pu, err := url.Parse(u)
	if err != nil {
		return 0
	}
	if p := pu.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return 0
		}
		return uint16(n)
	}
	switch pu.Scheme {
	case "https":
		return 443
	case "http":
		return 80
	case "ssh", "git+ssh", "ssh+git":
		return 22
	case "git":
		return 9418
	}
	return 0
}
