package judge

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/countersign/countersign/models"
)

// What the candidate leaves out is decided by the base's ignore rules, never the
// worker's: a worker that writes `helper.py` into its .gitignore must not get a
// candidate without the helper its tests import (the checks would have run with it,
// and the commit that lands would lack it), and a worker that un-ignores
// `node_modules/` must not get its own dependency tree into the candidate.
//
// The matching itself is git's: `git ls-files --others --exclude-from=<file>`, given one
// file of root-relative patterns translated from every .gitignore of the base. Why git
// and not a matcher library (go-git's plumbing/format/gitignore was the candidate):
// the property that matters is "the same files git would take", including the
// details a re-implementation gets subtly wrong — a directory that is excluded is
// never entered, so nothing under it can be re-included; trailing spaces and
// backslash escapes; `**` — and the property test (TestIgnoreMatchesGit) compares
// against git itself. Only the translation below is ours.
//
// Translation of a pattern p in <d>/.gitignore (git's rules, gitignore(5)): a pattern
// with no slash but a trailing one matches at any depth below d, so it becomes
// `/<d>/**/p`; one with a slash is relative to d, so it becomes `/<d>/p` (without p's
// own leading slash); a negation keeps its `!` in front. Files are written shallow to
// deep: in one file the last matching pattern wins, which gives a deeper .gitignore
// precedence over a shallower one, as git does. The root's own patterns are kept as
// they are. Directory names are escaped so their `*`, `?`, `[` and `\` match only
// themselves.

// ignoreRules returns the translated patterns of every .gitignore in the tree of
// commit (one pattern a line), ready for --exclude-from. A .gitignore that is a
// symbolic link is not read: git itself refuses to follow one.
func (s *Store) ignoreRules(ctx context.Context, commit string) ([]byte, error) {
	from := commit
	if out, err := s.git(ctx, gitCmd{args: []string{"rev-parse", "-q", "--verify", rulesRef(commit)}}); err == nil {
		from = strings.TrimSpace(string(out))
	}
	out, err := s.git(ctx, gitCmd{args: []string{"ls-tree", "-r", "-z", "--full-tree", from + "^{tree}"}})
	if err != nil {
		return nil, err
	}
	type file struct{ dir, blob string }
	var files []file
	for _, rec := range bytes.Split(out, []byte{0}) {
		// "<mode> <type> <id>\t<path>"
		meta, p, ok := strings.Cut(string(rec), "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "blob" || (f[0] != "100644" && f[0] != "100755") {
			continue
		}
		if path.Base(p) != ".gitignore" {
			continue
		}
		dir := path.Dir(p)
		if dir == "." {
			dir = ""
		}
		files = append(files, file{dir: dir, blob: f[2]})
	}
	// A parent directory's name is a prefix of its children's, so it sorts first.
	sort.Slice(files, func(i, j int) bool { return files[i].dir < files[j].dir })
	var buf bytes.Buffer
	for _, f := range files {
		data, err := s.Blob(ctx, f.blob)
		if err != nil {
			return nil, err
		}
		if err := translateIgnore(&buf, f.dir, data); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// translateIgnore writes the patterns of the .gitignore in dir ("" for the root) as
// root-relative patterns, one a line.
func translateIgnore(w *bytes.Buffer, dir string, data []byte) error {
	if strings.ContainsAny(dir, "\n\r") {
		return models.Errorf(models.EINVALID, "the base has a .gitignore in a directory whose name holds a line break (%q): its rules cannot be applied", dir)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // git skips a UTF-8 byte-order mark
	for _, raw := range strings.Split(string(data), "\n") {
		line := translatePattern(dir, raw)
		if line == "" {
			continue
		}
		w.WriteString(line)
		w.WriteByte('\n')
	}
	return nil
}

// translatePattern translates one line of <dir>/.gitignore; "" for a line that holds
// no pattern (blank, a comment).
func translatePattern(dir, line string) string {
	p := trimTrailingSpaces(line)
	if p == "" || p[0] == '#' {
		return ""
	}
	if dir == "" {
		return line // the root's patterns are already relative to the root
	}
	neg := ""
	if p[0] == '!' {
		neg, p = "!", p[1:]
	}
	body := strings.TrimSuffix(p, "/")
	if body == "" {
		return "" // "/" or "!/": git matches nothing with it
	}
	prefix := "/" + escapeGlob(dir) + "/"
	if !strings.Contains(body, "/") {
		return neg + prefix + "**/" + p
	}
	return neg + prefix + strings.TrimPrefix(p, "/")
}

// trimTrailingSpaces drops trailing spaces that are not escaped with a backslash, as
// git does before it reads a pattern.
func trimTrailingSpaces(s string) string {
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		// Count the backslashes before this space: an odd number escapes it.
		bs := 0
		for i := end - 2; i >= 0 && s[i] == '\\'; i-- {
			bs++
		}
		if bs%2 == 1 {
			break
		}
		end--
	}
	return s[:end]
}

// escapeGlob makes a directory name match only itself in a pattern.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '*', '?', '[':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// excludeLine is the pattern that leaves out the workspace-relative path rel (a file
// or a directory) wherever the rules would put it.
func excludeLine(rel string) string {
	return fmt.Sprintf("/%s", escapeGlob(rel))
}

// rulesRef names the commit that holds the .gitignore files a snapshot taken with
// git's own per-directory rules was taken under.
func rulesRef(snapshot string) string { return "refs/countersign/rules/" + snapshot }

// keepRules records, for a snapshot taken with git's own per-directory rules (the
// base), every .gitignore file git read, as a commit of its own under
// rulesRef(snapshot) — which ignoreRules then reads instead of the snapshot's tree.
// Why not the snapshot's tree: a .gitignore can ignore itself (`.venv/.gitignore` is
// `*`, and so are those pytest and mypy write into their caches), so it is not in
// the snapshot, yet its rules held at the base; without it a candidate would take
// the whole .venv.
func (s *Store) keepRules(ctx context.Context, dir, tmp, snapshot string, tracked, untracked []string) error {
	g := func(stdin []byte, args ...string) ([]byte, error) {
		c := gitCmd{dir: dir, env: []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "rules-index")}, args: append([]string{"--work-tree=" + dir}, args...)}
		if stdin != nil {
			c.stdin = bytes.NewReader(stdin)
		}
		return s.git(ctx, c)
	}
	// The ignored .gitignore files git read: listed with --directory, so nothing
	// inside an excluded directory (which git never enters) is.
	out, err := g(nil, "ls-files", "-z", "--others", "--ignored", "--directory", "--exclude-per-directory=.gitignore")
	if err != nil {
		return err
	}
	var list bytes.Buffer
	for _, p := range append(append(tracked, untracked...), strings.Split(string(out), "\x00")...) {
		if path.Base(p) == ".gitignore" && !strings.HasSuffix(p, "/") && !hasGitComponent(p) {
			list.WriteString(p)
			list.WriteByte(0)
		}
	}
	if list.Len() > 0 {
		if _, err := g(list.Bytes(), "update-index", "-z", "--add", "--remove", "--stdin"); err != nil {
			return err
		}
	}
	out, err = g(nil, "write-tree")
	if err != nil {
		return err
	}
	tree := strings.TrimSpace(string(out))
	out, err = s.git(ctx, gitCmd{env: snapshotIdent, stdin: strings.NewReader("countersign ignore rules\n"), args: []string{"commit-tree", "--no-gpg-sign", tree}})
	if err != nil {
		return err
	}
	_, err = s.git(ctx, gitCmd{whole: true, args: []string{"update-ref", rulesRef(snapshot), strings.TrimSpace(string(out))}})
	return err
}
