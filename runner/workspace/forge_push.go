package workspace

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/models"
)

// ForgePush is a verified commit going to a forge's repository over HTTPS with
// Countersign's own credentials.
type ForgePush struct {
	Repo   string // the checkout holding the commit
	URL    string // the forge's http(s) clone URL; it must not carry credentials
	Header string // "Authorization: ..." sent with every request; never logged
	Commit string // the verified commit, full hex id
	Branch string // the branch on the forge it becomes (forced: Countersign owns it)
	Notes  bool   // push NotesRef too (the attestations)
}

// PushToForge pushes p.Commit to p.Branch on the forge, forced, so that the branch
// names exactly the verified commit whatever was pushed to it since, and then the
// notes when asked. The credential travels as an http.extraHeader in git's
// environment (GIT_CONFIG_*), never on the command line (ps) nor in the URL (git
// prints URLs in its errors), and git runs with the manager's minimal environment and
// safety options, so no credential helper or user configuration adds or keeps it.
func (m *Manager) PushToForge(ctx context.Context, p ForgePush) error {
	var fe models.FieldErrors
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		fe.Add("url", "must be an http(s) URL without credentials")
	}
	if !isHexID(p.Commit) {
		fe.Add("commit", "must be a full commit id")
	}
	if err := ValidBranch(p.Branch); err != nil {
		fe.Add("branch", err.Error())
	}
	if strings.ContainsAny(p.Header, "\r\n") || !strings.Contains(p.Header, ":") {
		fe.Add("header", "must be one header line")
	}
	if err := fe.Err(); err != nil {
		return err
	}
	repo, err := repoDir(p.Repo)
	if err != nil {
		return err
	}
	gitDir, err := repoGitDir(repo)
	if err != nil {
		return err
	}
	env := []string{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=" + p.Header,
		"GIT_CONFIG_KEY_1=credential.helper", "GIT_CONFIG_VALUE_1="}
	push := func(spec string) error {
		r := gitRun{dir: repo, read: []string{repo}, write: []string{filepath.Join(gitDir, "refs"), filepath.Join(gitDir, "logs")}, env: env,
			args: []string{"-c", "protocol.ext.allow=never", "push", "--porcelain", "--no-verify", "--", p.URL, spec}}
		if port := remotePort(p.URL); port != 0 {
			r.ports = []uint16{port}
		}
		_, err := m.run(ctx, r)
		return err
	}
	if err := push("+" + p.Commit + ":refs/heads/" + p.Branch); err != nil {
		return fmt.Errorf("push %s to %s: %w", p.Branch, u.Redacted(), err)
	}
	if p.Notes {
		if err := push(NotesRef + ":" + NotesRef); err != nil {
			return &NotesPushError{Err: fmt.Errorf("push %s to %s: %w", NotesRef, u.Redacted(), err)}
		}
	}
	return nil
}

// NotesPushError is a forge push whose branch went but whose notes (the attestations)
// did not: the verified commit is there, only its note is missing.
type NotesPushError struct{ Err error }

// Error implements error.
func (e *NotesPushError) Error() string { return e.Err.Error() }

// Unwrap returns the push's error.
func (e *NotesPushError) Unwrap() error { return e.Err }

// isHexID reports whether s is a full SHA-1 or SHA-256 object id in lowercase hex.
func isHexID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
