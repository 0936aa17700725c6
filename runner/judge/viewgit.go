package judge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GitRequest says which git repository to give a view.
type GitRequest struct {
	// Root is the view's root; GitDir the repository's directory, judge-owned and
	// outside Root (under the task's meta dir, which judged processes may read but not
	// write).
	Root, GitDir string
	// Tree is the judged tree; Parent the commit the view's HEAD follows: the worker's
	// HEAD (imported into the store, so every object of it was checked), or the base
	// snapshot for a workspace that is not a checkout.
	Tree, Parent string
	// Repo is the user's repository the workspace belongs to ("" for none): its object
	// store is the view's alternate, for the history behind Parent.
	Repo string
}

// ViewGit gives a judge's view a git repository of the judge's making, so a verify
// command that asks git (`git diff --check`, `git merge-base --is-ancestor X HEAD`,
// `git grep`) sees what is judged: HEAD is a commit whose tree is the candidate's and
// whose parent is r.Parent — the commit a verified task lands, but for its message —,
// the index is that tree, and the objects are a pack of
// what the candidate added (from the store) plus, as an alternate, the user's
// repository for the history. Nothing of the worker's git state is used: no index, no
// HEAD file, no config or hooks of the worker's. It returns HEAD's commit.
func (s *Store) ViewGit(ctx context.Context, r GitRequest) (string, error) {
	for field, id := range map[string]string{"tree": r.Tree, "parent": r.Parent} {
		if err := checkOID(field, id); err != nil {
			return "", err
		}
	}
	out, err := s.git(ctx, gitCmd{env: snapshotIdent, stdin: strings.NewReader("judged candidate\n"),
		args: []string{"commit-tree", "--no-gpg-sign", r.Tree, "-p", r.Parent}})
	if err != nil {
		return "", err
	}
	head := strings.TrimSpace(string(out))
	if err := checkOID("commit", head); err != nil {
		return "", err
	}
	if err := os.RemoveAll(r.GitDir); err != nil {
		return "", err
	}
	if _, err := s.git(ctx, gitCmd{noGitDir: true, args: []string{"init", "-q", "--bare", r.GitDir}}); err != nil {
		return "", err
	}
	haveDir := ""
	if r.Repo != "" {
		if haveDir, err = gitDirOf(r.Repo); err != nil {
			return "", err
		}
		alt := filepath.Join(haveDir, "objects") + "\n"
		if err := os.WriteFile(filepath.Join(r.GitDir, "objects", "info", "alternates"), []byte(alt), 0o644); err != nil {
			return "", err
		}
	}
	if err := s.exportTo(ctx, r.GitDir, haveDir, head); err != nil {
		return "", err
	}
	cfg := "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\thooksPath = /dev/null\n\tfsmonitor = false\n[gc]\n\tauto = 0\n"
	if err := os.WriteFile(filepath.Join(r.GitDir, "config"), []byte(cfg), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(r.GitDir, "HEAD"), []byte(head+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(r.Root, ".git"), []byte("gitdir: "+r.GitDir+"\n"), 0o644); err != nil {
		return "", err
	}
	g := func(args ...string) error {
		_, err := s.git(ctx, gitCmd{noGitDir: true, dir: r.Root, args: append([]string{"--git-dir=" + r.GitDir, "--work-tree=" + r.Root}, args...)})
		return err
	}
	// The index has the tree but no stat data: the first git command that compares
	// it with the view hashes the files then, so views whose checks never ask git pay
	// nothing for it.
	if err := g("read-tree", head); err != nil {
		return "", fmt.Errorf("judge: the view's index: %w", err)
	}
	return head, nil
}
