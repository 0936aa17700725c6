package workspace

import (
	"context"
	"fmt"
	"path/filepath"
)

// NotesRef is where the runner attaches each verified commit's attestation (a git
// note), so that it travels with the commit when the notes ref is pushed.
const NotesRef = "refs/notes/countersign"

// AddNote attaches content to commit in repo as its note under NotesRef, replacing any
// note the commit had there. Confined, git reads the checkout and writes only its
// objects, refs and logs; the note is written with the runner's identity.
func (m *Manager) AddNote(ctx context.Context, repo, commit string, content []byte) error {
	repo, err := repoDir(repo)
	if err != nil {
		return err
	}
	gitDir, err := repoGitDir(repo)
	if err != nil {
		return err
	}
	r := gitRun{dir: repo, read: []string{repo}, stdin: content,
		write: []string{filepath.Join(gitDir, "objects"), filepath.Join(gitDir, "refs"), filepath.Join(gitDir, "logs")},
		env: []string{"GIT_AUTHOR_NAME=countersign", "GIT_AUTHOR_EMAIL=runner@countersign.invalid",
			"GIT_COMMITTER_NAME=countersign", "GIT_COMMITTER_EMAIL=runner@countersign.invalid"},
		args: []string{"notes", "--ref=" + NotesRef, "add", "-f", "-F", "-", commit}}
	if _, err := m.run(ctx, r); err != nil {
		return fmt.Errorf("workspace: attach the attestation note to %s: %w", commit, err)
	}
	return nil
}
