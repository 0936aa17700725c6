// Package forge speaks to the forges where teams review and merge: GitHub (REST API,
// github.com or an Enterprise base URL) and GitLab (REST API, gitlab.com or a
// self-managed base URL). Countersign opens a pull (merge) request for each verified
// task branch, sets the required commit status StatusContext on the verified commit,
// reads reviews back and learns of merges — through the maintained clients
// (google/go-github, GitLab's client-go), never hand-written HTTP.
//
// A Client holds the forge token; it is used only in Countersign's own process (API
// calls and the push's HTTP header), never passed to a worker, logged, put in an
// event or rendered.
package forge

import (
	"context"
	"net/http"
	"time"
)

// Kind names a forge's API.
type Kind string

// The forges Countersign speaks to.
const (
	GitHub Kind = "github"
	GitLab Kind = "gitlab"
)

// StatusContext is the name of the commit status (GitHub's context, GitLab's name) that
// Countersign sets on verified commits, the one branch protection should require.
const StatusContext = "countersign/verified"

// State is a commit status's state, in the words both forges share.
type State string

// Commit status states. Only the verified commit of a task that stands gets success.
const (
	StatePending State = "pending"
	StateSuccess State = "success"
	StateFailure State = "failure"
)

// Config says which forge and repository a Client speaks to.
type Config struct {
	Kind Kind
	// BaseURL is the API's base: empty for github.com (https://api.github.com/) and
	// gitlab.com; an Enterprise server's https://HOST/api/v3/ or a self-managed
	// GitLab's https://HOST (the client adds /api/v4).
	BaseURL string
	// Repo is "owner/name" on GitHub, the project's full path ("group/sub/name") on
	// GitLab.
	Repo string
	// Token is the credential Countersign acts with: a GitHub token with contents,
	// pull requests and commit statuses write; a GitLab token with the api scope.
	Token string
	// HTTPClient carries the API calls; http.DefaultClient's transport when nil.
	HTTPClient *http.Client
}

// PullSpec is the pull request Countersign wants for a task branch.
type PullSpec struct {
	Head  string // the task branch, in the same repository
	Base  string // the branch it merges into
	Title string
	Body  string // Markdown
}

// Pull is a pull (merge) request as the forge reports it.
type Pull struct {
	Number   int64  // GitHub's number, GitLab's iid
	URL      string // its page
	HeadSHA  string // the commit its head branch points at
	Open     bool
	Merged   bool
	MergeSHA string // the merge (or squash) commit, when merged
	MergedBy string // the login that merged it
}

// Status is a commit status to set under StatusContext.
type Status struct {
	State       State
	TargetURL   string // the task's page
	Description string // one line (forges cut it at 140 characters)
}

// ReviewState is what a review said.
type ReviewState string

// Review states.
const (
	ReviewApproved         ReviewState = "approved"
	ReviewChangesRequested ReviewState = "changes_requested"
	ReviewCommented        ReviewState = "commented"
)

// Review is one review of a pull request: on GitHub a submitted review with its line
// comments; on GitLab an approval, a reviewer's "requested changes", or a note.
type Review struct {
	ID          string // unique on the pull, stable across reads
	Author      string // the forge login
	State       ReviewState
	Body        string // the review's text, followed by its line comments ("path:line: text")
	CommitSHA   string // the commit it reviewed, when the forge says
	SubmittedAt time.Time
}

// EventKind says what a webhook delivery means to Countersign.
type EventKind string

// Webhook event kinds; anything else is EventIgnored.
const (
	EventReview    EventKind = "review"     // a review was submitted (Event.Review)
	EventMerged    EventKind = "merged"     // the pull was merged
	EventHeadMoved EventKind = "head_moved" // the pull's head branch got new commits
	EventClosed    EventKind = "closed"     // closed without a merge
	EventIgnored   EventKind = "ignored"
)

// Event is a webhook delivery, verified and normalised.
type Event struct {
	Delivery string // the forge's delivery id (replays are refused by it)
	Kind     EventKind
	Number   int64  // the pull it is about
	Head     string // its head branch
	HeadSHA  string
	MergeSHA string
	Actor    string // the login that caused it
	Review   *Review
}

// Client is one repository on one forge, acting with Countersign's token.
type Client interface {
	// Kind says which forge this is.
	Kind() Kind
	// CloneURL is the repository's HTTPS clone URL, as the forge reports it.
	CloneURL(ctx context.Context) (string, error)
	// PushHeader is the HTTP header git sends to push with the token
	// ("Authorization: Basic ..."), for `http.extraHeader`; never logged.
	PushHeader() string
	// Login is the forge identity the token acts as: reviews by it never count.
	Login(ctx context.Context) (string, error)
	// EnsurePull finds the open pull request from spec.Head into spec.Base and updates
	// its title and body, or opens one.
	EnsurePull(ctx context.Context, spec PullSpec) (Pull, error)
	// GetPull reads a pull request by number.
	GetPull(ctx context.Context, number int64) (Pull, error)
	// SetStatus sets StatusContext on sha.
	SetStatus(ctx context.Context, sha string, s Status) error
	// Reviews lists a pull request's reviews, oldest first.
	Reviews(ctx context.Context, number int64) ([]Review, error)
}

// WebhookParser checks a webhook delivery against the forge's secret and normalises it.
// A delivery whose signature (GitHub: X-Hub-Signature-256, HMAC-SHA256 of the body;
// GitLab: X-Gitlab-Token) does not match is an error and must change nothing.
type WebhookParser func(r *http.Request, secret string) (Event, error)
