package models

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Forge kinds: the forges whose pull requests and commit statuses Countersign drives
// (runner/forge speaks their APIs).
const (
	ForgeGitHub = "github"
	ForgeGitLab = "gitlab"
)

// Forge events, recorded with the task they concern. None carries a token, a secret
// or a webhook body: only numbers, logins, commits and the words of a review.
const (
	// EventForgePullOpened: a pull request was opened for a task's verified branch.
	EventForgePullOpened = "forge.pull_opened"
	// EventForgePullUpdated: the pull request was pointed at a new verified commit.
	EventForgePullUpdated = "forge.pull_updated"
	// EventForgeStatus: the countersign/verified status was set on a commit.
	EventForgeStatus = "forge.status_set"
	// EventForgeReview: a review on the pull request became a task action.
	EventForgeReview = "forge.review"
	// EventForgeReviewIgnored: a review that did not count, with why (unmapped
	// reviewer, the builder's own identity, Countersign's own login, no authority).
	EventForgeReviewIgnored = "forge.review_ignored"
	// EventForgePullClosed: the pull request was closed in the forge without a merge
	// (a merge is task.merged, via forge).
	EventForgePullClosed = "forge.pull_closed"
	// EventForgeSyncFailed: talking to the forge failed; the sync retries.
	EventForgeSyncFailed = "forge.sync_failed"
)

// Forge is a repository on GitHub or GitLab that agents' verified task branches are
// pushed to and opened as pull requests against. Token is the credential Countersign
// acts with and WebhookSecret checks the forge's webhook deliveries: both are stored
// as they are (they must be, to be used), set by an admin, never rendered, logged, put
// in an event or handed to a worker.
type Forge struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"` // ForgeGitHub or ForgeGitLab
	// BaseURL is the API's base: "" for github.com and gitlab.com, an Enterprise
	// server's https://HOST/api/v3/, a self-managed GitLab's https://HOST.
	BaseURL string `json:"base_url,omitempty"`
	// Repo is owner/name on GitHub, the project's path (group/sub/name) on GitLab.
	Repo string `json:"repo"`
	// TargetBranch is the branch pull requests merge into; "" takes the agent's
	// target branch, then the repository's default ("main").
	TargetBranch  string    `json:"target_branch,omitempty"`
	Token         string    `json:"-"`
	WebhookSecret string    `json:"-"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

var (
	forgeNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	githubRepo  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$`)
	gitlabPath  = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_.-]*(/[A-Za-z0-9_.][A-Za-z0-9_.-]*){1,20}$`)
)

// Validate checks what an admin sets. The token is required on creation (newToken):
// an update that leaves it "" keeps the stored one.
func (f *Forge) Validate(newToken bool) error {
	fe := FieldErrors{}
	f.Name = strings.ToLower(strings.TrimSpace(f.Name))
	f.BaseURL, f.Repo = strings.TrimSpace(f.BaseURL), strings.Trim(strings.TrimSpace(f.Repo), "/")
	f.TargetBranch, f.Token = strings.TrimSpace(f.TargetBranch), strings.TrimSpace(f.Token)
	if !forgeNameRe.MatchString(f.Name) {
		fe.Add("name", "must be 1-63 lowercase letters, digits, '-' or '_'")
	}
	switch f.Kind {
	case ForgeGitHub:
		if !githubRepo.MatchString(f.Repo) {
			fe.Add("repo", "must be OWNER/NAME")
		}
	case ForgeGitLab:
		if !gitlabPath.MatchString(f.Repo) || strings.Contains(f.Repo, "..") {
			fe.Add("repo", "must be the project's path, GROUP/NAME or GROUP/SUB/NAME")
		}
	default:
		fe.Add("kind", "must be github or gitlab")
	}
	if f.BaseURL != "" {
		if msg := forgeURLProblem(f.BaseURL); msg != "" {
			fe.Add("base_url", msg)
		}
	}
	if f.TargetBranch != "" && !validRefName(f.TargetBranch) {
		fe.Add("target_branch", "is not a branch name")
	}
	if newToken && f.Token == "" {
		fe.Add("token", "must not be empty")
	}
	if len(f.Token) > 4096 || strings.ContainsAny(f.Token, " \t\r\n") {
		fe.Add("token", "must be one line without spaces, at most 4096 characters")
	}
	return fe.Err()
}

func forgeURLProblem(raw string) string {
	if msg := webhookURLProblem(raw); msg != "" {
		return msg
	}
	if u, _ := url.Parse(raw); u.RawQuery != "" {
		return "must not carry a query"
	}
	return ""
}

// validRefName is a conservative branch-name check (git check-ref-format's rules that
// matter for a name an admin types).
func validRefName(s string) bool {
	if s == "" || len(s) > 200 || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") ||
		strings.HasSuffix(s, ".lock") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") || strings.Contains(s, "@{") || strings.Contains(s, "//") {
		return false
	}
	return !strings.ContainsAny(s, " ~^:?*[\\\x7f") && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 })
}

// ForgeDeliveryMemory is how long a webhook delivery id is kept to refuse its replay.
// Forges redeliver within hours (GitHub's manual redelivery, GitLab's retries), and a
// captured delivery replayed later finds a task that has moved on: its review was
// acted on once, by id, on the pull request.
const ForgeDeliveryMemory = 30 * 24 * time.Hour

// NewForgeWebhookSecret returns a new secret for a forge's webhook: 32 random bytes in
// hex, which both GitHub's and GitLab's forms accept.
func NewForgeWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}

// ForgeUser maps a login on a forge to a Countersign agent, so that a review on the
// forge is that agent's act, under its roles and the separation of duties.
type ForgeUser struct {
	ForgeID int64  `json:"forge_id"`
	Login   string `json:"login"`
	AgentID int64  `json:"agent_id"`
	Agent   string `json:"agent"` // filled by reads
}

// Pull states.
const (
	PullOpen   = "open"
	PullMerged = "merged"
	PullClosed = "closed"
)

// ForgePull is a task's pull request and what Countersign last told the forge about
// it: the sync compares this with what the task says now and acts on the difference.
type ForgePull struct {
	TaskID  int64  `json:"task_id"`
	ForgeID int64  `json:"forge_id"`
	Number  int64  `json:"number"`
	URL     string `json:"url"`
	State   string `json:"state"` // PullOpen, PullMerged, PullClosed
	// Commit is the verified commit the pull request and its description were last
	// made for.
	Commit string `json:"commit"`
	// Status is the state last set on Commit ("" before the first), StatusNote its
	// description.
	Status     string `json:"status,omitempty"`
	StatusNote string `json:"status_note,omitempty"`
	// Moved is the last head commit, not the verified one, that was marked failure.
	Moved string `json:"moved,omitempty"`
	// Reviews are the ids of the reviews already acted on (newest last, at most 200).
	Reviews  []string `json:"-"`
	MergeSHA string   `json:"merge_sha,omitempty"`
	// Error is the last sync failure, "" once a sync succeeds.
	Error     string    `json:"error,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Seen reports whether review id was already acted on.
func (p *ForgePull) Seen(id string) bool {
	for _, r := range p.Reviews {
		if r == id {
			return true
		}
	}
	return false
}

// MarkSeen records review id as acted on, keeping the newest 200.
func (p *ForgePull) MarkSeen(id string) {
	if p.Seen(id) {
		return
	}
	p.Reviews = append(p.Reviews, id)
	if n := len(p.Reviews); n > 200 {
		p.Reviews = p.Reviews[n-200:]
	}
}

// ForgeTx is what the forge store adds to a Tx. The gorm store's transactions
// implement it.
type ForgeTx interface {
	Tx
	CreateForge(ctx context.Context, f *Forge) error
	UpdateForge(ctx context.Context, f *Forge) error
	GetForge(ctx context.Context, id int64) (*Forge, error)
	GetForgeByName(ctx context.Context, name string) (*Forge, error)
	ListForges(ctx context.Context) ([]Forge, error)
	DeleteForge(ctx context.Context, id int64) error
	// PutForgeUser maps login on the forge to an agent, replacing an earlier mapping;
	// DeleteForgeUser removes it.
	PutForgeUser(ctx context.Context, u *ForgeUser) error
	DeleteForgeUser(ctx context.Context, forgeID int64, login string) error
	// ForgeUserAgent returns the agent login maps to on the forge; ENOTFOUND when none.
	ForgeUserAgent(ctx context.Context, forgeID int64, login string) (*Agent, error)
	ListForgeUsers(ctx context.Context, forgeID int64) ([]ForgeUser, error)
	// GetForgePull returns a task's pull request; ENOTFOUND when it has none.
	GetForgePull(ctx context.Context, taskID int64) (*ForgePull, error)
	// LockForgePull is GetForgePull holding the row for update until the tx ends.
	LockForgePull(ctx context.Context, taskID int64) (*ForgePull, error)
	// FindForgePull returns the pull request number on a forge; ENOTFOUND when none.
	FindForgePull(ctx context.Context, forgeID, number int64) (*ForgePull, error)
	SaveForgePull(ctx context.Context, p *ForgePull) error
	// ListOpenForgePulls returns the open pull requests, oldest task first.
	ListOpenForgePulls(ctx context.Context) ([]ForgePull, error)
	// TasksWithoutPull returns up to limit tasks that have a commit, an agent bound to
	// a forge and no pull request yet, oldest first — leaving out a task that another
	// task not cancelled depends on: a chain of steps is one pull request, at its end,
	// whose head holds every step's verified work.
	TasksWithoutPull(ctx context.Context, limit int) ([]Task, error)
	// AddForgeDelivery records a webhook delivery id; ECONFLICT when it was seen.
	AddForgeDelivery(ctx context.Context, forgeID int64, delivery string, at time.Time) error
	// PruneForgeDeliveries forgets the delivery ids received before before.
	PruneForgeDeliveries(ctx context.Context, before time.Time) error
}

// ForgeStore is a Store with the forge store.
type ForgeStore interface {
	Store
	ForgeTx
}
