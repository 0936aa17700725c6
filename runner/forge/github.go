package forge

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-github/v75/github"
)

// gitHub is a Client on the GitHub REST API through google/go-github.
type gitHub struct {
	api         *github.Client
	owner, repo string
	token       string

	mu    sync.Mutex
	login string
}

// NewGitHub returns a Client for cfg.Repo ("owner/name") on github.com, or on the
// Enterprise server at cfg.BaseURL (its /api/v3/ is added when missing, so a test
// server's root URL works too). It makes no request.
func NewGitHub(cfg Config) (Client, error) {
	owner, name, err := splitRepo(cfg.Repo)
	if err != nil {
		return nil, err
	}
	if cfg.Token == "" {
		return nil, errors.New("forge: GitHub needs a token (contents, pull requests and commit statuses write)")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: http.DefaultTransport}
	}
	api := github.NewClient(hc).WithAuthToken(cfg.Token)
	if cfg.BaseURL != "" {
		api, err = api.WithEnterpriseURLs(cfg.BaseURL, cfg.BaseURL)
		if err != nil {
			return nil, errors.New("forge: GitHub base URL " + cfg.BaseURL + " does not parse")
		}
	}
	return &gitHub{api: api, owner: owner, repo: name, token: cfg.Token}, nil
}

func (g *gitHub) Kind() Kind { return GitHub }

func (g *gitHub) err(op string, err error) error { return wrapErr("github: "+op, g.token, err) }

// CloneURL is the repository's clone_url.
func (g *gitHub) CloneURL(ctx context.Context) (string, error) {
	r, _, err := g.api.Repositories.Get(ctx, g.owner, g.repo)
	if err != nil {
		return "", g.err("get repository", err)
	}
	if r.GetCloneURL() == "" {
		return "", errors.New("forge: github: the repository has no clone_url")
	}
	return r.GetCloneURL(), nil
}

// PushHeader authenticates git over HTTPS as GitHub documents for tokens: Basic with
// the user x-access-token.
func (g *gitHub) PushHeader() string { return basicHeader("x-access-token", g.token) }

// Login is the authenticated user's login, asked once.
func (g *gitHub) Login(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.login != "" {
		return g.login, nil
	}
	u, _, err := g.api.Users.Get(ctx, "")
	if err != nil {
		return "", g.err("get authenticated user", err)
	}
	if u.GetLogin() == "" {
		return "", errors.New("forge: github: the authenticated user has no login")
	}
	g.login = u.GetLogin()
	return g.login, nil
}

// EnsurePull edits the open pull from owner:Head into Base, or creates it.
func (g *gitHub) EnsurePull(ctx context.Context, spec PullSpec) (Pull, error) {
	open, _, err := g.api.PullRequests.List(ctx, g.owner, g.repo, &github.PullRequestListOptions{
		State: "open", Head: g.owner + ":" + spec.Head, Base: spec.Base,
	})
	if err != nil {
		return Pull{}, g.err("list pulls", err)
	}
	for _, p := range open {
		if p.GetHead().GetRef() != spec.Head || p.GetBase().GetRef() != spec.Base {
			continue // a server that ignores the filter must not make us edit another pull
		}
		edited, _, err := g.api.PullRequests.Edit(ctx, g.owner, g.repo, p.GetNumber(),
			&github.PullRequest{Title: github.Ptr(spec.Title), Body: github.Ptr(spec.Body)})
		if err != nil {
			return Pull{}, g.err("edit pull", err)
		}
		return gitHubPull(edited), nil
	}
	created, _, err := g.api.PullRequests.Create(ctx, g.owner, g.repo, &github.NewPullRequest{
		Title: github.Ptr(spec.Title), Head: github.Ptr(spec.Head),
		Base: github.Ptr(spec.Base), Body: github.Ptr(spec.Body),
	})
	if err != nil {
		return Pull{}, g.err("create pull", err)
	}
	return gitHubPull(created), nil
}

// GetPull reads one pull request.
func (g *gitHub) GetPull(ctx context.Context, number int64) (Pull, error) {
	p, _, err := g.api.PullRequests.Get(ctx, g.owner, g.repo, int(number))
	if err != nil {
		return Pull{}, g.err("get pull", err)
	}
	return gitHubPull(p), nil
}

func gitHubPull(p *github.PullRequest) Pull {
	out := Pull{
		Number:  int64(p.GetNumber()),
		URL:     p.GetHTMLURL(),
		HeadSHA: p.GetHead().GetSHA(),
		Open:    p.GetState() == "open",
		Merged:  p.GetMerged(),
	}
	if out.Merged {
		out.MergeSHA = p.GetMergeCommitSHA()
		out.MergedBy = p.GetMergedBy().GetLogin()
	}
	return out
}

// SetStatus creates a commit status under StatusContext; GitHub keeps the latest per
// context.
func (g *gitHub) SetStatus(ctx context.Context, sha string, s Status) error {
	st := &github.RepoStatus{
		State:       github.Ptr(string(s.State)),
		Context:     github.Ptr(StatusContext),
		Description: github.Ptr(truncateRunes(s.Description, maxDescription)),
	}
	if s.TargetURL != "" {
		st.TargetURL = github.Ptr(s.TargetURL)
	}
	if _, _, err := g.api.Repositories.CreateStatus(ctx, g.owner, g.repo, sha, st); err != nil {
		return g.err("create status", err)
	}
	return nil
}

// Reviews lists submitted reviews, oldest first. APPROVED, CHANGES_REQUESTED and
// COMMENTED map to the three ReviewStates; PENDING (not yet submitted) and DISMISSED
// reviews are left out. The body of a changes-requested or commented review is
// followed by its line comments, "path:line: text" each.
func (g *gitHub) Reviews(ctx context.Context, number int64) ([]Review, error) {
	var out []Review
	opts := &github.ListOptions{PerPage: 100}
	for {
		page, resp, err := g.api.PullRequests.ListReviews(ctx, g.owner, g.repo, int(number), opts)
		if err != nil {
			return nil, g.err("list reviews", err)
		}
		for _, rv := range page {
			r, ok, err := g.review(ctx, number, rv)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, r)
			}
		}
		if resp == nil || resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// review maps one GitHub review; ok is false for the states left out.
func (g *gitHub) review(ctx context.Context, number int64, rv *github.PullRequestReview) (Review, bool, error) {
	state, ok := gitHubReviewState(rv.GetState())
	if !ok {
		return Review{}, false, nil
	}
	r := Review{
		ID:          "review:" + itoa(rv.GetID()),
		Author:      rv.GetUser().GetLogin(),
		State:       state,
		Body:        strings.TrimSpace(rv.GetBody()),
		CommitSHA:   rv.GetCommitID(),
		SubmittedAt: rv.GetSubmittedAt().Time,
	}
	if state == ReviewApproved {
		return r, true, nil
	}
	var lines []string
	opts := &github.ListOptions{PerPage: 100}
	for {
		cs, resp, err := g.api.PullRequests.ListReviewComments(ctx, g.owner, g.repo, int(number), rv.GetID(), opts)
		if err != nil {
			return Review{}, false, g.err("list review comments", err)
		}
		for _, c := range cs {
			line := c.GetLine()
			if line == 0 {
				line = c.GetOriginalLine() // a comment on a line that has since moved
			}
			lines = append(lines, lineComment(c.GetPath(), int64(line), c.GetBody()))
		}
		if resp == nil || resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	r.Body = joinBody(r.Body, lines)
	return r, true, nil
}

func gitHubReviewState(s string) (ReviewState, bool) {
	switch strings.ToUpper(s) {
	case "APPROVED":
		return ReviewApproved, true
	case "CHANGES_REQUESTED":
		return ReviewChangesRequested, true
	case "COMMENTED":
		return ReviewCommented, true
	}
	return "", false
}
