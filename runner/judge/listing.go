package judge

// Listings the runner asks of the store: a base's ignored entries, a snapshot's paths and
// those of them the rules protect.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
)

// Ignored lists the entries of dir that its own .gitignore files ignore, as git lists
// them (`ls-files --others --ignored --directory`: a wholly ignored directory is one
// entry, with no trailing slash here), excluding the top-level names in skip. It is
// what PrepareEnv's key digests: the base's dependency trees and caches. Run before
// any worker, so the .gitignore files are the base's own.
func (s *Store) Ignored(ctx context.Context, dir string, skip ...string) ([]string, error) {
	tmp, err := os.MkdirTemp(s.tmpRoot(), "ignored-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	args := []string{"--work-tree=" + dir, "ls-files", "-z", "--others", "--ignored", "--directory",
		"--exclude-per-directory=.gitignore"}
	out, err := s.git(ctx, gitCmd{dir: dir, env: []string{"GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}, args: args})
	if err != nil {
		return nil, err
	}
	var list []string
	for _, p := range bytes.Split(out, []byte{0}) {
		rel := strings.TrimSuffix(string(p), "/")
		if rel == "" || hasGitComponent(rel) || skipped(rel, skip) {
			continue
		}
		list = append(list, rel)
	}
	return list, nil
}

func skipped(rel string, skip []string) bool {
	top, _, _ := strings.Cut(rel, "/")
	for _, s := range skip {
		if top == s {
			return true
		}
	}
	return false
}

// Paths lists the paths of the files in commit's tree (slash-separated, sorted, links
// included, submodules not).
func (s *Store) Paths(ctx context.Context, commit string) ([]string, error) {
	if err := checkOID("commit", commit); err != nil {
		return nil, err
	}
	out, err := s.git(ctx, gitCmd{args: []string{"ls-tree", "-r", "-z", "--name-only", commit + "^{tree}"}})
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			paths = append(paths, string(p))
		}
	}
	return paths, nil
}

// Protected lists those of paths that rules protect whole: the base's test files,
// beside which the judge puts its canaries.
func Protected(paths []string, rules []Rule) []string {
	var out []string
	for _, p := range paths {
		if whole, _ := classify(rules, p); whole {
			out = append(out, p)
		}
	}
	return out
}
