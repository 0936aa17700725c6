// Package forgetest runs scripted GitHub and GitLab API servers for tests: httptest
// servers that speak the documented REST shapes the real clients parse, keep pull
// requests, statuses and reviews in memory, and host a real bare git repository over
// git's smart HTTP protocol (git http-backend through net/http/cgi), so a test can
// push with the token and see the pull's head follow.
package forgetest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/runner/forge"
)

// Request is one request the server received, for tests to grep.
type Request struct {
	Method string
	Path   string // the escaped path, as sent
	Query  string
	Header http.Header
	Body   string // API requests only; git's pack bodies are left out
	Status int    // the status code answered
}

// PullState is a pull (merge) request as the server holds it.
type PullState struct {
	Number   int64 // GitHub number, GitLab iid
	Head     string
	Base     string
	Title    string
	Body     string
	State    string // "open", "closed" or "merged"
	HeadSHA  string // the head branch's ref in the bare repository, read now
	MergeSHA string
	MergedBy string
	Author   string
	Created  time.Time
}

// StatusRecord is one commit status set on a sha, in the order received.
type StatusRecord struct {
	State       string // as the forge spells it (GitLab: failed)
	Context     string // GitHub context, GitLab name
	TargetURL   string
	Description string
}

// LineComment is a review comment on a line of a file.
type LineComment struct {
	Path string
	Line int
	Text string
}

// review is a review as the server holds it, whichever forge.
type review struct {
	ID       int64
	Login    string
	State    forge.ReviewState
	Body     string
	Commit   string
	Comments []LineComment
	At       time.Time
}

// Server is a scripted forge: one repository, one token.
type Server struct {
	t       testing.TB
	kind    forge.Kind
	repo    string // owner/name or the project's full path
	token   string
	srv     *httptest.Server
	root    string // GIT_PROJECT_ROOT
	bareDir string

	mu       sync.Mutex
	login    string
	users    map[string]int64
	pulls    []*PullState
	statuses map[string][]StatusRecord
	reviews  map[int64][]*review
	nextID   int64
	requests []Request
}

// NewGitHub starts a GitHub API server (under /api/v3/) for owner/repo, accepting
// token. Its clone URL is URL()/owner/repo.git.
func NewGitHub(t testing.TB, owner, repo, token string) *Server {
	return start(t, forge.GitHub, owner+"/"+repo, token)
}

// NewGitLab starts a GitLab API server (under /api/v4/) for the project at
// projectPath, accepting token. Its clone URL is URL()/projectPath.git.
func NewGitLab(t testing.TB, projectPath, token string) *Server {
	return start(t, forge.GitLab, projectPath, token)
}

func start(t testing.TB, kind forge.Kind, repo, token string) *Server {
	t.Helper()
	s := &Server{
		t: t, kind: kind, repo: repo, token: token, login: "countersign-bot",
		users: map[string]int64{}, statuses: map[string][]StatusRecord{},
		reviews: map[int64][]*review{}, nextID: 1000,
	}
	s.initRepo()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the server's root URL.
func (s *Server) URL() string { return s.srv.URL }

// Config is the forge.Config that points a real client at this server.
func (s *Server) Config() forge.Config {
	base := s.srv.URL + "/api/v3/"
	if s.kind == forge.GitLab {
		base = s.srv.URL
	}
	return forge.Config{Kind: s.kind, BaseURL: base, Repo: s.repo, Token: s.token}
}

// CloneURL is the repository's smart-HTTP URL, the one the API reports.
func (s *Server) CloneURL() string { return s.srv.URL + "/" + s.repo + ".git" }

// BareDir is the bare repository's directory.
func (s *Server) BareDir() string { return s.bareDir }

// Kind is the forge this server speaks as.
func (s *Server) Kind() forge.Kind { return s.kind }

// SetLogin sets the login of the token's user.
func (s *Server) SetLogin(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.login = login
}

// Requests is every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Pulls is every pull request, its head sha read from the bare repository now.
func (s *Server) Pulls() []PullState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PullState, 0, len(s.pulls))
	for _, p := range s.pulls {
		out = append(out, s.snapshot(p))
	}
	return out
}

// Statuses is every status set on sha, in order.
func (s *Server) Statuses(sha string) []StatusRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]StatusRecord(nil), s.statuses[sha]...)
}

// LatestStatus is the last status set on sha under context.
func (s *Server) LatestStatus(sha, context string) (StatusRecord, bool) {
	st := s.Statuses(sha)
	for i := len(st) - 1; i >= 0; i-- {
		if st[i].Context == context {
			return st[i], true
		}
	}
	return StatusRecord{}, false
}

// AddReview records a review of pull number by login. On GitLab an approval is an
// approval, changes requested is the reviewer's requested_changes state plus a note
// with body and one diff note per line comment, and a comment is notes.
func (s *Server) AddReview(number int64, login string, state forge.ReviewState, body string, comments ...LineComment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pull(number)
	if p == nil {
		s.t.Fatalf("forgetest: AddReview: no pull %d", number)
	}
	s.userID(login)
	s.nextID++
	s.reviews[number] = append(s.reviews[number], &review{
		ID: s.nextID, Login: login, State: state, Body: body,
		Commit: s.refSHA(p.Head), Comments: comments, At: time.Now().UTC(),
	})
	s.nextID += int64(len(comments)) // comment and note ids follow the review's
}

// snapshot copies p with its head sha read from the bare repository.
func (s *Server) snapshot(p *PullState) PullState {
	c := *p
	if c.State != "merged" {
		c.HeadSHA = s.refSHA(p.Head)
	}
	return c
}

func (s *Server) pull(number int64) *PullState {
	for _, p := range s.pulls {
		if p.Number == number {
			return p
		}
	}
	return nil
}

// userID is login's stable user id.
func (s *Server) userID(login string) int64 {
	id, ok := s.users[login]
	if !ok {
		id = int64(len(s.users) + 1)
		s.users[login] = id
	}
	return id
}

// serve records the request, then routes it to git or the API.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	isGit := strings.Contains(path, ".git/") || strings.HasSuffix(path, ".git")
	rec := Request{Method: r.Method, Path: path, Query: r.URL.RawQuery, Header: r.Header.Clone()}
	if !isGit && r.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rec.Body = string(b)
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	s.mu.Lock()
	s.requests = append(s.requests, rec)
	idx := len(s.requests) - 1
	s.mu.Unlock()
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	w = sw
	defer func() {
		s.mu.Lock()
		s.requests[idx].Status = sw.code
		s.mu.Unlock()
	}()
	if isGit {
		s.serveGit(w, r)
		return
	}
	if !s.apiAuthorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": s.unauthorizedMessage()})
		return
	}
	if s.kind == forge.GitHub {
		s.serveGitHub(w, r)
		return
	}
	s.serveGitLab(w, r)
}

func (s *Server) apiAuthorized(r *http.Request) bool {
	if s.kind == forge.GitLab && r.Header.Get("PRIVATE-TOKEN") == s.token {
		return true
	}
	a := r.Header.Get("Authorization")
	return a == "Bearer "+s.token || (s.kind == forge.GitHub && a == "token "+s.token)
}

func (s *Server) unauthorizedMessage() string {
	if s.kind == forge.GitLab {
		return "401 Unauthorized"
	}
	return "Bad credentials"
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Flush lets git http-backend's streamed answers through.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
