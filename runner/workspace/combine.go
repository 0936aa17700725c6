package workspace

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/models"
)

// repoGit runs git in one repository for Merge and Combine, which read its checkout
// and write at most its object store and refs (plumbing) until a checked-out
// target has to move.
type repoGit struct {
	m                 *Manager
	ctx               context.Context
	repo              string
	reading, plumbing access
}

// openRepoGit resolves repo (see repoDir) and its git directory.
func (m *Manager) openRepoGit(ctx context.Context, repo string) (*repoGit, error) {
	repo, err := repoDir(repo)
	if err != nil {
		return nil, err
	}
	gitDir, err := repoGitDir(repo)
	if err != nil {
		return nil, err
	}
	return &repoGit{m: m, ctx: ctx, repo: repo,
		reading:  access{read: []string{repo}},
		plumbing: access{read: []string{repo}, write: storeWrite(gitDir)},
	}, nil
}

// git runs git in the repository with access a.
func (r *repoGit) git(a access, stdin []byte, env []string, args ...string) ([]byte, error) {
	return r.m.run(r.ctx, gitRun{dir: r.repo, read: a.read, write: a.write, stdin: stdin, env: env, args: args})
}

// holds reports whether b's history holds a.
func (r *repoGit) holds(a, b string) (bool, error) {
	_, err := r.git(r.reading, nil, nil, "merge-base", "--is-ancestor", a, b)
	if exitCode(err) == 1 {
		return false, nil
	}
	return err == nil, err
}

// mergeCommit writes the merge commit of first and second (in that order of
// parents) by committer with msg, without a working tree, and returns its id. A
// conflict returns *ConflictError, named after names' Target and Branch.
func (r *repoGit) mergeCommit(msg string, committer Identity, first, second string, names MergeRequest) (string, error) {
	out, err := r.git(r.plumbing, nil, nil, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", first, second)
	if exitCode(err) == 1 {
		return "", r.m.conflict(r.ctx, r.repo, names, out)
	}
	if err != nil {
		return "", err
	}
	tree, _, _ := bytes.Cut(out, []byte{0})
	env := append(committer.env("AUTHOR"), committer.env("COMMITTER")...)
	out, err = r.git(r.plumbing, []byte(msg), env, "-c", "commit.gpgSign=false", "commit-tree", "--no-gpg-sign",
		"-p", first, "-p", second, "-F", "-", strings.TrimSpace(string(tree)))
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(out))
	if !isCommitID(id) {
		return "", fmt.Errorf("git commit-tree printed %q, not a commit id", id)
	}
	return id, nil
}

// Combine returns a commit of repo that holds every one of commits (full ids, the
// verified commits of steps that ran side by side): the one that already holds the
// others, or merge commits of those no other holds, in the order given, made by
// DefaultCommitter with subject, without a working tree. A conflict returns *ConflictError (Target names the commits merged so far,
// Branch the one that conflicts); nothing is written but unreferenced objects.
// Confined, git reads the checkout and writes only its object store.
func (m *Manager) Combine(ctx context.Context, repo string, commits []string, subject string) (string, error) {
	if len(commits) == 0 {
		return "", models.Errorf(models.EINVALID, "nothing to combine")
	}
	for _, c := range commits {
		if !isCommitID(c) {
			return "", models.Errorf(models.EINVALID, "%q is not a full commit id", c)
		}
	}
	msg, err := message(subject, "", nil)
	if err != nil {
		return "", err
	}
	r, err := m.openRepoGit(ctx, repo)
	if err != nil {
		return "", err
	}
	heads, err := r.unheld(commits)
	if err != nil {
		return "", err
	}
	cur := heads[0]
	for _, next := range heads[1:] {
		if ok, err := r.holds(next, cur); err != nil {
			return "", err
		} else if ok {
			continue
		}
		if ok, err := r.holds(cur, next); err != nil {
			return "", err
		} else if ok {
			cur = next
			continue
		}
		names := MergeRequest{Target: short(cur), Branch: short(next)}
		if cur, err = r.mergeCommit(msg, DefaultCommitter, cur, next, names); err != nil {
			return "", err
		}
	}
	return cur, nil
}

// unheld returns the commits no other one holds (of equal ones, the first), in
// their order. A commit another one holds adds nothing (a fix that merged the
// others already holds them): only the rest are merged, so a conflict resolved once
// stays so.
func (r *repoGit) unheld(commits []string) ([]string, error) {
	var heads []string
	for i, c := range commits {
		redundant := false
		for j, o := range commits {
			if i == j || redundant {
				continue
			}
			if c == o {
				redundant = j < i
				continue
			}
			var err error
			if redundant, err = r.holds(c, o); err != nil {
				return nil, err
			}
		}
		if !redundant {
			heads = append(heads, c)
		}
	}
	return heads, nil
}
