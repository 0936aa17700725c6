package forgetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/runner/forge"
)

// gitEnv keeps the server's git away from the machine's configuration and names
// the author of commits it makes.
func gitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=Forge Test", "GIT_AUTHOR_EMAIL=forge@example.test",
		"GIT_COMMITTER_NAME=Forge Test", "GIT_COMMITTER_EMAIL=forge@example.test",
	)
}

// git runs git in the bare repository and returns its trimmed output.
func (s *Server) git(stdin string, extraEnv []string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir", s.bareDir}, args...)...)
	cmd.Env = append(gitEnv(), extraEnv...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func (s *Server) mustGit(stdin string, extraEnv []string, args ...string) string {
	s.t.Helper()
	out, err := s.git(stdin, extraEnv, args...)
	if err != nil {
		s.t.Fatalf("forgetest: %v", err)
	}
	return out
}

// initRepo creates the bare repository with one commit on main.
func (s *Server) initRepo() {
	s.root = s.t.TempDir()
	s.bareDir = filepath.Join(s.root, filepath.FromSlash(s.repo)+".git")
	if err := os.MkdirAll(filepath.Dir(s.bareDir), 0o755); err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command("git", "init", "--bare", "--quiet", "--initial-branch=main", s.bareDir)
	cmd.Env = gitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		s.t.Fatalf("forgetest: git init --bare: %v: %s", err, out)
	}
	s.mustGit("", nil, "config", "http.receivepack", "true")
	blob := s.mustGit("# test repository\n", nil, "hash-object", "-w", "--stdin")
	tree := s.mustGit("100644 blob "+blob+"\tREADME.md\n", nil, "mktree")
	commit := s.mustGit("", nil, "commit-tree", tree, "-m", "initial commit")
	s.mustGit("", nil, "update-ref", "refs/heads/main", commit)
}

// refSHA is the commit branch points at, or "" when it does not exist.
func (s *Server) refSHA(branch string) string {
	out, err := s.git("", nil, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return ""
	}
	return out
}

// BranchSHA is the commit branch points at in the bare repository ("" if none).
func (s *Server) BranchSHA(branch string) string { return s.refSHA(branch) }

// PushCommit commits file with content onto branch in the bare repository, as
// someone else pushing would (a missing branch starts from main), and returns the
// new commit.
func (s *Server) PushCommit(branch, file, content string) string {
	s.t.Helper()
	parent := s.refSHA(branch)
	if parent == "" {
		parent = s.refSHA("main")
	}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(s.t.TempDir(), "index")}
	s.mustGit("", env, "read-tree", parent)
	blob := s.mustGit(content, nil, "hash-object", "-w", "--stdin")
	s.mustGit("", env, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+file)
	tree := s.mustGit("", env, "write-tree")
	commit := s.mustGit("", nil, "commit-tree", tree, "-p", parent, "-m", "change "+file)
	s.mustGit("", nil, "update-ref", "refs/heads/"+branch, commit)
	return commit
}

// Merge merges pull number as login: a real merge commit of head into base in the
// bare repository (git merge-tree), base moved to it. It returns the merge commit.
func (s *Server) Merge(number int64, login string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pull(number)
	if p == nil || p.State != "open" {
		s.t.Fatalf("forgetest: Merge: no open pull %d", number)
	}
	base, head := s.refSHA(p.Base), s.refSHA(p.Head)
	out := s.mustGit("", nil, "merge-tree", "--write-tree", base, head)
	tree, _, _ := strings.Cut(out, "\n")
	msg := fmt.Sprintf("Merge pull request #%d from %s", number, p.Head)
	commit := s.mustGit("", nil, "commit-tree", tree, "-p", base, "-p", head, "-m", msg)
	s.mustGit("", nil, "update-ref", "refs/heads/"+p.Base, commit, base)
	s.userID(login)
	p.State, p.HeadSHA, p.MergeSHA, p.MergedBy = "merged", head, commit, login
	return commit
}

// Close closes pull number without merging it.
func (s *Server) Close(number int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pull(number); p != nil && p.State == "open" {
		p.HeadSHA, p.State = s.refSHA(p.Head), "closed"
	}
}

// serveGit serves git's smart HTTP protocol, for the token only (HTTP Basic, the
// forge's user name, the token as password), through git http-backend.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	wantUser := "x-access-token"
	if s.kind == forge.GitLab {
		wantUser = "oauth2"
	}
	if !ok || user != wantUser || pass != s.token {
		w.Header().Set("WWW-Authenticate", `Basic realm="forgetest"`)
		http.Error(w, "authentication required", http.StatusUnauthorized)
		return
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		http.Error(w, "no git", http.StatusInternalServerError)
		return
	}
	h := &cgi.Handler{
		Path: gitPath,
		Root: "/",
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=" + user,
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		},
	}
	h.ServeHTTP(w, r)
}

// writeJSON writes v as the JSON body with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
