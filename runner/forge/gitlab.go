package forge

import (
	"context"
	"errors"
	"net/http"
	"sync"

	gitlab "gitlab.com/gitlab-org/api/client-go"
)

// gitLab is a Client on the GitLab REST API (v4) through GitLab's client-go.
type gitLab struct {
	api     *gitlab.Client
	project string // the project's full path; client-go escapes it into the URL
	token   string

	mu    sync.Mutex
	login string
}

// NewGitLab returns a Client for the project cfg.Repo ("group/sub/name") on gitlab.com
// or on the self-managed GitLab at cfg.BaseURL (client-go adds /api/v4). It makes no
// request.
func NewGitLab(cfg Config) (Client, error) {
	if cfg.Repo == "" {
		return nil, errors.New("forge: GitLab needs the project's full path in Repo")
	}
	if cfg.Token == "" {
		return nil, errors.New("forge: GitLab needs a token with the api scope")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport}
	}
	opts := []gitlab.ClientOptionFunc{gitlab.WithHTTPClient(hc)}
	if cfg.BaseURL != "" {
		opts = append(opts, gitlab.WithBaseURL(cfg.BaseURL))
	}
	api, err := gitlab.NewClient(cfg.Token, opts...)
	if err != nil {
		return nil, wrapErr("gitlab: new client", cfg.Token, err)
	}
	return &gitLab{api: api, project: cfg.Repo, token: cfg.Token}, nil
}

func (g *gitLab) Kind() Kind { return GitLab }

func (g *gitLab) err(op string, err error) error { return wrapErr("gitlab: "+op, g.token, err) }

// CloneURL is the project's http_url_to_repo.
func (g *gitLab) CloneURL(ctx context.Context) (string, error) {
	p, _, err := g.api.Projects.GetProject(g.project, nil, gitlab.WithContext(ctx))
	if err != nil {
		return "", g.err("get project", err)
	}
	if p.HTTPURLToRepo == "" {
		return "", errors.New("forge: gitlab: the project has no http_url_to_repo")
	}
	return p.HTTPURLToRepo, nil
}

// PushHeader authenticates git over HTTPS as GitLab documents for access tokens:
// Basic with the user oauth2.
func (g *gitLab) PushHeader() string { return basicHeader("oauth2", g.token) }

// Login is the current user's username, asked once.
func (g *gitLab) Login(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.login != "" {
		return g.login, nil
	}
	u, _, err := g.api.Users.CurrentUser(gitlab.WithContext(ctx))
	if err != nil {
		return "", g.err("current user", err)
	}
	if u.Username == "" {
		return "", errors.New("forge: gitlab: the current user has no username")
	}
	g.login = u.Username
	return g.login, nil
}

// EnsurePull updates the opened merge request from Head into Base, or creates one.
func (g *gitLab) EnsurePull(ctx context.Context, spec PullSpec) (Pull, error) {
	open, _, err := g.api.MergeRequests.ListProjectMergeRequests(g.project, &gitlab.ListProjectMergeRequestsOptions{
		State:        gitlab.Ptr("opened"),
		SourceBranch: gitlab.Ptr(spec.Head),
		TargetBranch: gitlab.Ptr(spec.Base),
	}, gitlab.WithContext(ctx))
	if err != nil {
		return Pull{}, g.err("list merge requests", err)
	}
	for _, mr := range open {
		if mr.SourceBranch != spec.Head || mr.TargetBranch != spec.Base {
			continue // never edit another merge request if the filter was ignored
		}
		up, _, err := g.api.MergeRequests.UpdateMergeRequest(g.project, mr.IID, &gitlab.UpdateMergeRequestOptions{
			Title: gitlab.Ptr(spec.Title), Description: gitlab.Ptr(spec.Body),
		}, gitlab.WithContext(ctx))
		if err != nil {
			return Pull{}, g.err("update merge request", err)
		}
		return gitLabPull(&up.BasicMergeRequest), nil
	}
	mr, _, err := g.api.MergeRequests.CreateMergeRequest(g.project, &gitlab.CreateMergeRequestOptions{
		Title: gitlab.Ptr(spec.Title), Description: gitlab.Ptr(spec.Body),
		SourceBranch: gitlab.Ptr(spec.Head), TargetBranch: gitlab.Ptr(spec.Base),
	}, gitlab.WithContext(ctx))
	if err != nil {
		return Pull{}, g.err("create merge request", err)
	}
	return gitLabPull(&mr.BasicMergeRequest), nil
}

// GetPull reads a merge request by iid.
func (g *gitLab) GetPull(ctx context.Context, number int64) (Pull, error) {
	mr, _, err := g.api.MergeRequests.GetMergeRequest(g.project, number, nil, gitlab.WithContext(ctx))
	if err != nil {
		return Pull{}, g.err("get merge request", err)
	}
	return gitLabPull(&mr.BasicMergeRequest), nil
}

// gitLabPull maps a merge request: opened is Open, merged is Merged; the merge commit
// is merge_commit_sha, or squash_commit_sha when the merge squashed (and made no
// merge commit); the merger is merge_user, or the deprecated merged_by.
func gitLabPull(mr *gitlab.BasicMergeRequest) Pull {
	out := Pull{
		Number:  mr.IID,
		URL:     mr.WebURL,
		HeadSHA: mr.SHA,
		Open:    mr.State == "opened",
		Merged:  mr.State == "merged",
	}
	if out.Merged {
		out.MergeSHA = mr.MergeCommitSHA
		if out.MergeSHA == "" {
			out.MergeSHA = mr.SquashCommitSHA
		}
		if mr.MergeUser != nil {
			out.MergedBy = mr.MergeUser.Username
		} else if mr.MergedBy != nil {
			out.MergedBy = mr.MergedBy.Username
		}
	}
	return out
}

// SetStatus sets the commit status named StatusContext. GitLab's states are pending,
// running, success, failed and canceled: StateFailure becomes failed.
func (g *gitLab) SetStatus(ctx context.Context, sha string, s Status) error {
	var state gitlab.BuildStateValue
	switch s.State {
	case StatePending:
		state = gitlab.Pending
	case StateSuccess:
		state = gitlab.Success
	case StateFailure:
		state = gitlab.Failed
	default:
		return errors.New("forge: gitlab: unknown status state " + string(s.State))
	}
	opt := &gitlab.SetCommitStatusOptions{
		State:       state,
		Name:        gitlab.Ptr(StatusContext),
		Description: gitlab.Ptr(truncateRunes(s.Description, maxDescription)),
	}
	if s.TargetURL != "" {
		opt.TargetURL = gitlab.Ptr(s.TargetURL)
	}
	if _, _, err := g.api.Commits.SetCommitStatus(g.project, sha, opt, gitlab.WithContext(ctx)); err != nil {
		return g.err("set commit status", err)
	}
	return nil
}
