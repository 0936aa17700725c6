package forgetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign/runner/forge"
)

// serveGitLab routes the GitLab REST (v4) endpoints the client uses. The project is
// named by its URL-escaped full path (or id 1), as client-go sends it.
func (s *Server) serveGitLab(w http.ResponseWriter, r *http.Request) {
	mux := http.NewServeMux()
	proj := "/api/v4/projects/{id}"
	mr := proj + "/merge_requests/{n}"
	mux.HandleFunc("GET /api/v4/user", s.glUser)
	mux.HandleFunc("GET "+proj, s.inProject(s.glProject))
	mux.HandleFunc("GET "+proj+"/merge_requests", s.inProject(s.glListMRs))
	mux.HandleFunc("POST "+proj+"/merge_requests", s.inProject(s.glCreateMR))
	mux.HandleFunc("GET "+mr, s.inProject(s.glGetMR))
	mux.HandleFunc("PUT "+mr, s.inProject(s.glUpdateMR))
	mux.HandleFunc("GET "+mr+"/reviewers", s.inProject(s.glReviewers))
	mux.HandleFunc("GET "+mr+"/notes", s.inProject(s.glNotes))
	mux.HandleFunc("GET "+mr+"/approvals", s.inProject(s.glApprovals))
	mux.HandleFunc("POST "+proj+"/statuses/{sha}", s.inProject(s.glStatus))
	s.mu.Lock()
	defer s.mu.Unlock()
	mux.ServeHTTP(w, r)
}

// inProject answers 404 for any project but this one.
func (s *Server) inProject(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if id := r.PathValue("id"); id != s.repo && id != "1" {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
			return
		}
		h(w, r)
	}
}

func (s *Server) glUserJSON(login string) map[string]any {
	return map[string]any{"id": s.userID(login), "username": login, "name": login,
		"state": "active", "web_url": s.srv.URL + "/" + login}
}

func (s *Server) glUser(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.glUserJSON(s.login))
}

func (s *Server) glProject(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id": 1, "path_with_namespace": s.repo, "default_branch": "main",
		"web_url": s.srv.URL + "/" + s.repo, "http_url_to_repo": s.CloneURL(),
	})
}

func (s *Server) glMRJSON(p *PullState) map[string]any {
	c := s.snapshot(p)
	state := map[string]string{"open": "opened", "closed": "closed", "merged": "merged"}[c.State]
	out := map[string]any{
		"id": 7000 + c.Number, "iid": c.Number, "project_id": 1, "title": c.Title,
		"description": c.Body, "state": state, "source_branch": c.Head,
		"target_branch": c.Base, "sha": c.HeadSHA, "merge_commit_sha": nil,
		"squash_commit_sha": nil, "merge_user": nil, "merged_by": nil,
		"author":     s.glUserJSON(c.Author),
		"web_url":    fmt.Sprintf("%s/%s/-/merge_requests/%d", s.srv.URL, s.repo, c.Number),
		"created_at": c.Created.Format(time.RFC3339),
	}
	if c.State == "merged" {
		out["merge_commit_sha"] = c.MergeSHA
		out["merge_user"] = s.glUserJSON(c.MergedBy)
		out["merged_by"] = s.glUserJSON(c.MergedBy)
	}
	return out
}

func (s *Server) glListMRs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	out := []map[string]any{}
	for _, p := range s.pulls {
		state := map[string]string{"open": "opened", "closed": "closed", "merged": "merged"}[p.State]
		if st := q.Get("state"); st != "" && st != "all" && st != state {
			continue
		}
		if h := q.Get("source_branch"); h != "" && h != p.Head {
			continue
		}
		if b := q.Get("target_branch"); b != "" && b != p.Base {
			continue
		}
		out = append(out, s.glMRJSON(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) glCreateMR(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title        string `json:"title"`
		Description  string `json:"description"`
		SourceBranch string `json:"source_branch"`
		TargetBranch string `json:"target_branch"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.SourceBranch == "" || in.TargetBranch == "" || in.Title == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "title, source_branch and target_branch are required"})
		return
	}
	if s.refSHA(in.SourceBranch) == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": []string{"Source branch does not exist"}})
		return
	}
	for _, p := range s.pulls {
		if p.State == "open" && p.Head == in.SourceBranch && p.Base == in.TargetBranch {
			writeJSON(w, http.StatusConflict, map[string]any{"message": []string{
				"Another open merge request already exists for this source branch: !" + strconv.FormatInt(p.Number, 10)}})
			return
		}
	}
	p := s.newPull(in.SourceBranch, in.TargetBranch, in.Title, in.Description)
	writeJSON(w, http.StatusCreated, s.glMRJSON(p))
}

func (s *Server) glGetMR(w http.ResponseWriter, r *http.Request) {
	if p := s.pullFrom(w, r); p != nil {
		writeJSON(w, http.StatusOK, s.glMRJSON(p))
	}
}

func (s *Server) glUpdateMR(w http.ResponseWriter, r *http.Request) {
	p := s.pullFrom(w, r)
	if p == nil {
		return
	}
	var in struct {
		Title       *string `json:"title"`
		Description *string `json:"description"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	if in.Title != nil {
		p.Title = *in.Title
	}
	if in.Description != nil {
		p.Body = *in.Description
	}
	writeJSON(w, http.StatusOK, s.glMRJSON(p))
}

// latestStates is each reviewer's latest review state on pull number, in first-review order.
func (s *Server) latestStates(number int64) ([]string, map[string]forge.ReviewState) {
	var order []string
	states := map[string]forge.ReviewState{}
	for _, rv := range s.reviews[number] {
		if _, ok := states[rv.Login]; !ok {
			order = append(order, rv.Login)
		}
		states[rv.Login] = rv.State
	}
	return order, states
}

func (s *Server) glReviewers(w http.ResponseWriter, r *http.Request) {
	p := s.pullFrom(w, r)
	if p == nil {
		return
	}
	order, states := s.latestStates(p.Number)
	out := []map[string]any{}
	for _, login := range order {
		st := map[forge.ReviewState]string{forge.ReviewApproved: "approved",
			forge.ReviewChangesRequested: "requested_changes", forge.ReviewCommented: "reviewed"}[states[login]]
		out = append(out, map[string]any{"user": s.glUserJSON(login), "state": st,
			"created_at": p.Created.Format(time.RFC3339)})
	}
	writeJSON(w, http.StatusOK, out)
}

// glNotes lists the notes reviews made: a system note per approval, a note for a
// review's body and a diff note per line comment.
func (s *Server) glNotes(w http.ResponseWriter, r *http.Request) {
	p := s.pullFrom(w, r)
	if p == nil {
		return
	}
	out := []map[string]any{}
	note := func(id int64, login, body string, system bool, at time.Time, pos map[string]any) {
		n := map[string]any{"id": id, "type": nil, "body": body, "author": s.glUserJSON(login),
			"system": system, "created_at": at.Format(time.RFC3339Nano), "noteable_type": "MergeRequest",
			"noteable_iid": p.Number, "project_id": 1, "resolvable": pos != nil}
		if pos != nil {
			n["type"], n["position"] = "DiffNote", pos
		}
		out = append(out, n)
	}
	base := s.refSHA(p.Base)
	for _, rv := range s.reviews[p.Number] {
		if rv.State == forge.ReviewApproved {
			note(rv.ID, rv.Login, "approved this merge request", true, rv.At, nil)
			continue
		}
		if rv.Body != "" {
			note(rv.ID, rv.Login, rv.Body, false, rv.At, nil)
		}
		for i, c := range rv.Comments {
			note(rv.ID+int64(i)+1, rv.Login, c.Text, false, rv.At, map[string]any{
				"base_sha": base, "start_sha": base, "head_sha": rv.Commit, "position_type": "text",
				"new_path": c.Path, "new_line": c.Line, "old_path": c.Path, "old_line": nil,
			})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) glApprovals(w http.ResponseWriter, r *http.Request) {
	p := s.pullFrom(w, r)
	if p == nil {
		return
	}
	order, states := s.latestStates(p.Number)
	by := []map[string]any{}
	for _, login := range order {
		if states[login] == forge.ReviewApproved {
			by = append(by, map[string]any{"user": s.glUserJSON(login)})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": 7000 + p.Number, "iid": p.Number, "project_id": 1, "title": p.Title,
		"approved": len(by) > 0, "approvals_required": 0, "approvals_left": 0, "approved_by": by,
	})
}

func (s *Server) glStatus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		State       string `json:"state"`
		Name        string `json:"name"`
		Context     string `json:"context"`
		TargetURL   string `json:"target_url"`
		Description string `json:"description"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "400 Bad request"})
		return
	}
	switch in.State {
	case "pending", "running", "success", "failed", "canceled", "skipped":
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "state does not have a valid value"})
		return
	}
	name := in.Name
	if name == "" {
		name = in.Context
	}
	if name == "" {
		name = "default"
	}
	sha := r.PathValue("sha")
	if _, err := s.git("", nil, "cat-file", "-e", sha+"^{commit}"); err != nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 References for commit Not Found"})
		return
	}
	s.statuses[sha] = append(s.statuses[sha], StatusRecord{in.State, name, in.TargetURL, in.Description})
	s.nextID++
	writeJSON(w, http.StatusCreated, map[string]any{"id": s.nextID, "sha": sha, "status": in.State,
		"name": name, "target_url": in.TargetURL, "description": in.Description,
		"author": s.glUserJSON(s.login)})
}
