package forgetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serveGitHub routes the GitHub REST endpoints the client uses, under /api/v3/.
func (s *Server) serveGitHub(w http.ResponseWriter, r *http.Request) {
	mux := http.NewServeMux()
	repo := "/api/v3/repos/{owner}/{repo}"
	mux.HandleFunc("GET /api/v3/user", s.ghUser)
	mux.HandleFunc("GET "+repo, s.ghRepo)
	mux.HandleFunc("GET "+repo+"/pulls", s.ghListPulls)
	mux.HandleFunc("POST "+repo+"/pulls", s.ghCreatePull)
	mux.HandleFunc("GET "+repo+"/pulls/{n}", s.ghGetPull)
	mux.HandleFunc("PATCH "+repo+"/pulls/{n}", s.ghEditPull)
	mux.HandleFunc("GET "+repo+"/pulls/{n}/reviews", s.ghReviews)
	mux.HandleFunc("GET "+repo+"/pulls/{n}/reviews/{id}/comments", s.ghReviewComments)
	mux.HandleFunc("POST "+repo+"/statuses/{sha}", s.ghStatus)
	s.mu.Lock()
	defer s.mu.Unlock()
	mine := "/api/v3/repos/" + s.repo
	if strings.HasPrefix(r.URL.Path, "/api/v3/repos/") &&
		r.URL.Path != mine && !strings.HasPrefix(r.URL.Path, mine+"/") {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	mux.ServeHTTP(w, r)
}

func (s *Server) ghUserJSON(login string) map[string]any {
	return map[string]any{"login": login, "id": s.userID(login), "type": "User",
		"html_url": s.srv.URL + "/" + login}
}

func (s *Server) ghUser(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.ghUserJSON(s.login))
}

func (s *Server) ghRepo(w http.ResponseWriter, r *http.Request) {
	owner, name, _ := strings.Cut(s.repo, "/")
	writeJSON(w, http.StatusOK, map[string]any{
		"id": 1, "name": name, "full_name": s.repo, "private": true,
		"owner":     s.ghUserJSON(owner),
		"html_url":  s.srv.URL + "/" + s.repo,
		"clone_url": s.CloneURL(), "default_branch": "main",
	})
}

func (s *Server) ghPullJSON(p *PullState) map[string]any {
	c := s.snapshot(p)
	owner, _, _ := strings.Cut(s.repo, "/")
	out := map[string]any{
		"id": 5000 + c.Number, "number": c.Number, "title": c.Title, "body": c.Body,
		"state":    map[bool]string{true: "open", false: "closed"}[c.State == "open"],
		"html_url": fmt.Sprintf("%s/%s/pull/%d", s.srv.URL, s.repo, c.Number),
		"merged":   c.State == "merged", "merge_commit_sha": nil, "merged_by": nil,
		"user":       s.ghUserJSON(c.Author),
		"head":       map[string]any{"ref": c.Head, "sha": c.HeadSHA, "label": owner + ":" + c.Head},
		"base":       map[string]any{"ref": c.Base, "sha": s.refSHA(c.Base), "label": owner + ":" + c.Base},
		"created_at": c.Created.Format(time.RFC3339),
	}
	if c.State == "merged" {
		out["merge_commit_sha"] = c.MergeSHA
		out["merged_by"] = s.ghUserJSON(c.MergedBy)
	}
	return out
}

func (s *Server) ghListPulls(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	owner, _, _ := strings.Cut(s.repo, "/")
	out := []map[string]any{}
	for _, p := range s.pulls {
		state := map[bool]string{true: "open", false: "closed"}[p.State == "open"]
		if st := q.Get("state"); st != "" && st != "all" && st != state {
			continue
		}
		if h := q.Get("head"); h != "" && h != owner+":"+p.Head {
			continue
		}
		if b := q.Get("base"); b != "" && b != p.Base {
			continue
		}
		out = append(out, s.ghPullJSON(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ghCreatePull(w http.ResponseWriter, r *http.Request) {
	var in struct{ Title, Head, Base, Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Head == "" || in.Base == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed"})
		return
	}
	if s.refSHA(in.Head) == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
			"errors": []map[string]any{{"resource": "PullRequest", "field": "head", "code": "invalid"}}})
		return
	}
	for _, p := range s.pulls {
		if p.State == "open" && p.Head == in.Head && p.Base == in.Base {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
				"errors": []map[string]any{{"resource": "PullRequest", "code": "custom",
					"message": "A pull request already exists for " + in.Head + "."}}})
			return
		}
	}
	p := s.newPull(in.Head, in.Base, in.Title, in.Body)
	writeJSON(w, http.StatusCreated, s.ghPullJSON(p))
}

// newPull opens a pull by the token's user.
func (s *Server) newPull(head, base, title, body string) *PullState {
	p := &PullState{Number: int64(len(s.pulls) + 1), Head: head, Base: base, Title: title,
		Body: body, State: "open", Author: s.login, Created: time.Now().UTC()}
	s.pulls = append(s.pulls, p)
	return p
}

// pullFrom is the pull the request's {n} names, or nil after writing 404.
func (s *Server) pullFrom(w http.ResponseWriter, r *http.Request) *PullState {
	n, err := strconv.ParseInt(r.PathValue("n"), 10, 64)
	p := s.pull(n)
	if err != nil || p == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return nil
	}
	return p
}

func (s *Server) ghGetPull(w http.ResponseWriter, r *http.Request) {
	if p := s.pullFrom(w, r); p != nil {
		writeJSON(w, http.StatusOK, s.ghPullJSON(p))
	}
}

func (s *Server) ghEditPull(w http.ResponseWriter, r *http.Request) {
	p := s.pullFrom(w, r)
	if p == nil {
		return
	}
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	if in.Title != nil {
		p.Title = *in.Title
	}
	if in.Body != nil {
		p.Body = *in.Body
	}
	writeJSON(w, http.StatusOK, s.ghPullJSON(p))
}

func (s *Server) ghReviews(w http.ResponseWriter, r *http.Request) {
	p := s.pullFrom(w, r)
	if p == nil {
		return
	}
	out := []map[string]any{}
	for _, rv := range s.reviews[p.Number] {
		out = append(out, map[string]any{
			"id": rv.ID, "user": s.ghUserJSON(rv.Login), "body": rv.Body,
			"state":     strings.ToUpper(string(rv.State)),
			"commit_id": rv.Commit, "submitted_at": rv.At.Format(time.RFC3339),
			"html_url": fmt.Sprintf("%s/%s/pull/%d#pullrequestreview-%d", s.srv.URL, s.repo, p.Number, rv.ID),
		})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) ghReviewComments(w http.ResponseWriter, r *http.Request) {
	p := s.pullFrom(w, r)
	if p == nil {
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	for _, rv := range s.reviews[p.Number] {
		if rv.ID != id {
			continue
		}
		out := []map[string]any{}
		for i, c := range rv.Comments {
			out = append(out, map[string]any{
				"id": rv.ID + int64(i) + 1, "pull_request_review_id": rv.ID,
				"path": c.Path, "line": c.Line, "original_line": c.Line, "side": "RIGHT",
				"body": c.Text, "commit_id": rv.Commit, "user": s.ghUserJSON(rv.Login),
			})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
}

func (s *Server) ghStatus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		State       string `json:"state"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
		Context     string `json:"context"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON"})
		return
	}
	switch in.State {
	case "error", "failure", "pending", "success":
	default:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed"})
		return
	}
	if in.Context == "" {
		in.Context = "default"
	}
	sha := r.PathValue("sha")
	if _, err := s.git("", nil, "cat-file", "-e", sha+"^{commit}"); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "No commit found for SHA: " + sha})
		return
	}
	s.statuses[sha] = append(s.statuses[sha], StatusRecord{in.State, in.Context, in.TargetURL, in.Description})
	s.nextID++
	writeJSON(w, http.StatusCreated, map[string]any{
		"id": s.nextID, "state": in.State, "context": in.Context, "target_url": in.TargetURL,
		"description": in.Description, "creator": s.ghUserJSON(s.login),
	})
}
