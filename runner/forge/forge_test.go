package forge_test

import (
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/countersign/countersign/runner/forge"
	"github.com/countersign/countersign/runner/forge/forgetest"
)

const testToken = "tok-7f3a9c-SECRET"

// fixture is one scripted forge and a real client pointed at it.
type fixture struct {
	name   string
	srv    *forgetest.Server
	client forge.Client
}

// forges runs f once against each forge.
func forges(t *testing.T, f func(t *testing.T, fx fixture)) {
	for _, kind := range []forge.Kind{forge.GitHub, forge.GitLab} {
		t.Run(string(kind), func(t *testing.T) {
			var srv *forgetest.Server
			var newClient func(forge.Config) (forge.Client, error)
			if kind == forge.GitHub {
				srv, newClient = forgetest.NewGitHub(t, "acme", "widgets", testToken), forge.NewGitHub
			} else {
				srv, newClient = forgetest.NewGitLab(t, "acme/tools/widgets", testToken), forge.NewGitLab
			}
			c, err := newClient(srv.Config())
			if err != nil {
				t.Fatal(err)
			}
			if c.Kind() != kind {
				t.Fatalf("Kind = %s, want %s", c.Kind(), kind)
			}
			f(t, fixture{name: string(kind), srv: srv, client: c})
		})
	}
}

// openPull pushes a task branch and opens its pull through the client.
func openPull(t *testing.T, fx fixture) forge.Pull {
	t.Helper()
	fx.srv.PushCommit("task/1", "a.txt", "one\ntwo\nthree\n")
	p, err := fx.client.EnsurePull(context.Background(), forge.PullSpec{
		Head: "task/1", Base: "main", Title: "Task 1", Body: "first body"})
	if err != nil {
		t.Fatalf("EnsurePull: %v", err)
	}
	return p
}

func countRequests(fx fixture, method, pathSuffix string) int {
	n := 0
	for _, r := range fx.srv.Requests() {
		if r.Method == method && strings.HasSuffix(r.Path, pathSuffix) {
			n++
		}
	}
	return n
}

func TestEnsurePullCreatesThenUpdates(t *testing.T) {
	forges(t, func(t *testing.T, fx fixture) {
		p := openPull(t, fx)
		if p.Number != 1 || !p.Open || p.Merged || p.HeadSHA != fx.srv.BranchSHA("task/1") || p.URL == "" {
			t.Fatalf("created pull = %+v, head %s", p, fx.srv.BranchSHA("task/1"))
		}
		p2, err := fx.client.EnsurePull(context.Background(), forge.PullSpec{
			Head: "task/1", Base: "main", Title: "Task 1 (again)", Body: "second body"})
		if err != nil {
			t.Fatal(err)
		}
		if p2.Number != p.Number {
			t.Fatalf("second EnsurePull opened #%d, want #%d updated", p2.Number, p.Number)
		}
		pulls := fx.srv.Pulls()
		if len(pulls) != 1 || pulls[0].Body != "second body" || pulls[0].Title != "Task 1 (again)" {
			t.Fatalf("server pulls = %+v", pulls)
		}
		create, update := countRequests(fx, "POST", "/pulls"), countRequests(fx, "PATCH", "/pulls/1")
		if fx.name == "gitlab" {
			create, update = countRequests(fx, "POST", "/merge_requests"), countRequests(fx, "PUT", "/merge_requests/1")
		}
		if create != 1 || update != 1 {
			t.Fatalf("creates %d updates %d, want 1 and 1", create, update)
		}
	})
}

func TestGetPullFollowsPushAndMerge(t *testing.T) {
	forges(t, func(t *testing.T, fx fixture) {
		ctx := context.Background()
		p := openPull(t, fx)
		moved := fx.srv.PushCommit("task/1", "b.txt", "pushed by someone else\n")
		got, err := fx.client.GetPull(ctx, p.Number)
		if err != nil {
			t.Fatal(err)
		}
		if got.HeadSHA != moved || got.HeadSHA == p.HeadSHA {
			t.Fatalf("head after push = %s, want %s (was %s)", got.HeadSHA, moved, p.HeadSHA)
		}
		mergeSHA := fx.srv.Merge(p.Number, "alice")
		got, err = fx.client.GetPull(ctx, p.Number)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Merged || got.Open || got.MergeSHA != mergeSHA || got.MergedBy != "alice" {
			t.Fatalf("after merge = %+v, want merged by alice at %s", got, mergeSHA)
		}
		if main := fx.srv.BranchSHA("main"); main != mergeSHA {
			t.Fatalf("main = %s, want the merge commit %s", main, mergeSHA)
		}
		out, err := exec.Command("git", "--git-dir", fx.srv.BareDir(), "rev-list", "--parents", "-n1", mergeSHA).Output()
		if err != nil || !strings.Contains(string(out), moved) {
			t.Fatalf("merge commit parents %q (%v) do not include head %s", out, err, moved)
		}
	})
}

func TestSetStatus(t *testing.T) {
	forges(t, func(t *testing.T, fx fixture) {
		ctx := context.Background()
		p := openPull(t, fx)
		long := strings.Repeat("é", 200)
		if err := fx.client.SetStatus(ctx, p.HeadSHA, forge.Status{
			State: forge.StateSuccess, TargetURL: "https://cs.example/t/1", Description: long}); err != nil {
			t.Fatal(err)
		}
		st, ok := fx.srv.LatestStatus(p.HeadSHA, forge.StatusContext)
		if !ok || st.State != "success" || st.TargetURL != "https://cs.example/t/1" {
			t.Fatalf("status = %+v, %v", st, ok)
		}
		if n := utf8.RuneCountInString(st.Description); n != 140 {
			t.Fatalf("description has %d runes, want 140", n)
		}
		if err := fx.client.SetStatus(ctx, p.HeadSHA, forge.Status{State: forge.StateFailure, Description: "judge said no"}); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"github": "failure", "gitlab": "failed"}[fx.name]
		st, _ = fx.srv.LatestStatus(p.HeadSHA, forge.StatusContext)
		if st.State != want || len(fx.srv.Statuses(p.HeadSHA)) != 2 {
			t.Fatalf("failure status = %+v (all %+v), want state %s", st, fx.srv.Statuses(p.HeadSHA), want)
		}
		if err := fx.client.SetStatus(ctx, strings.Repeat("0", 40), forge.Status{State: forge.StateSuccess}); err == nil {
			t.Fatal("a status on a commit the forge lacks must fail")
		}
	})
}

func TestReviews(t *testing.T) {
	forges(t, func(t *testing.T, fx fixture) {
		ctx := context.Background()
		p := openPull(t, fx)
		fx.srv.AddReview(p.Number, "bob", forge.ReviewChangesRequested, "please fix",
			forgetest.LineComment{Path: "a.txt", Line: 3, Text: "off by one"},
			forgetest.LineComment{Path: "b/c.go", Line: 10, Text: "handle the error"})
		fx.srv.AddReview(p.Number, "dave", forge.ReviewCommented, "a thought")
		fx.srv.AddReview(p.Number, "carol", forge.ReviewApproved, "")
		rs, err := fx.client.Reviews(ctx, p.Number)
		if err != nil {
			t.Fatal(err)
		}
		byAuthor := map[string]forge.Review{}
		for _, r := range rs {
			if r.ID == "" {
				t.Fatalf("review without ID: %+v", r)
			}
			byAuthor[r.Author] = r
		}
		if len(rs) != 3 {
			t.Fatalf("reviews = %+v, want 3", rs)
		}
		bob := byAuthor["bob"]
		if bob.State != forge.ReviewChangesRequested || !strings.Contains(bob.Body, "please fix") ||
			!strings.Contains(bob.Body, "a.txt:3: off by one") || !strings.Contains(bob.Body, "b/c.go:10: handle the error") {
			t.Fatalf("bob's review = %+v", bob)
		}
		if bob.CommitSHA != p.HeadSHA {
			t.Fatalf("bob reviewed %q, want %s", bob.CommitSHA, p.HeadSHA)
		}
		if byAuthor["carol"].State != forge.ReviewApproved || byAuthor["dave"].State != forge.ReviewCommented ||
			byAuthor["dave"].Body != "a thought" {
			t.Fatalf("carol/dave = %+v / %+v", byAuthor["carol"], byAuthor["dave"])
		}
		// A second round of changes requested is a new review, not the old one again.
		fx.srv.AddReview(p.Number, "bob", forge.ReviewChangesRequested, "still wrong")
		rs2, err := fx.client.Reviews(ctx, p.Number)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range rs {
			seen[r.ID] = true
		}
		fresh := 0
		for _, r := range rs2 {
			if !seen[r.ID] && r.Author == "bob" && strings.Contains(r.Body, "still wrong") {
				fresh++
			}
		}
		if fresh != 1 {
			t.Fatalf("second round: %+v, want one new bob review", rs2)
		}
	})
}

func TestLoginIsCached(t *testing.T) {
	forges(t, func(t *testing.T, fx fixture) {
		fx.srv.SetLogin("cs-bot")
		for i := 0; i < 2; i++ {
			got, err := fx.client.Login(context.Background())
			if err != nil || got != "cs-bot" {
				t.Fatalf("Login = %q, %v", got, err)
			}
		}
		if n := countRequests(fx, "GET", "/user"); n != 1 {
			t.Fatalf("%d user requests, want 1 (cached)", n)
		}
		for _, r := range fx.srv.Requests() {
			if r.Header.Get("Authorization") == "" && r.Header.Get("PRIVATE-TOKEN") == "" {
				t.Fatalf("request %s %s carried no token", r.Method, r.Path)
			}
		}
	})
}

// gitCmd runs git with a clean configuration; extra config comes through the
// environment (GIT_CONFIG_COUNT...), never argv.
func gitCmd(t *testing.T, dir string, config map[string]string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=", "HOME="+dir,
		"GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.test",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.test")
	i := 0
	for k, v := range config {
		cmd.Env = append(cmd.Env, "GIT_CONFIG_KEY_"+itoa(i)+"="+k, "GIT_CONFIG_VALUE_"+itoa(i)+"="+v)
		i++
	}
	cmd.Env = append(cmd.Env, "GIT_CONFIG_COUNT="+itoa(i))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestGitPushWithPushHeader(t *testing.T) {
	forges(t, func(t *testing.T, fx fixture) {
		ctx := context.Background()
		url, err := fx.client.CloneURL(ctx)
		if err != nil || url != fx.srv.CloneURL() {
			t.Fatalf("CloneURL = %q, %v; want %s", url, err, fx.srv.CloneURL())
		}
		p := openPull(t, fx)
		auth := map[string]string{"http.extraHeader": fx.client.PushHeader()}
		dir := t.TempDir()
		if out, err := gitCmd(t, dir, auth, "clone", "--quiet", "--branch", "task/1", url, "w"); err != nil {
			t.Fatalf("clone: %v: %s", err, out)
		}
		w := dir + "/w"
		if err := os.WriteFile(w+"/c.txt", []byte("by countersign\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"add", "c.txt"}, {"commit", "--quiet", "-m", "verified change"}} {
			if out, err := gitCmd(t, w, nil, args...); err != nil {
				t.Fatalf("git %v: %v: %s", args, err, out)
			}
		}
		head, _ := gitCmd(t, w, nil, "rev-parse", "HEAD")
		head = strings.TrimSpace(head)
		out, err := gitCmd(t, w, nil, "push", url, "task/1")
		if err == nil || !(strings.Contains(out, "401") || strings.Contains(out, "Authentication failed") ||
			strings.Contains(out, "could not read Username")) {
			t.Fatalf("push without the header: err %v, output %s; want a 401 refusal", err, out)
		}
		refused := 0
		for _, r := range fx.srv.Requests() {
			if strings.Contains(r.Query, "git-receive-pack") && r.Status == 401 && r.Header.Get("Authorization") == "" {
				refused++
			}
		}
		if refused == 0 {
			t.Fatal("the server answered no unauthenticated receive-pack request with 401")
		}
		if fx.srv.BranchSHA("task/1") == head {
			t.Fatal("the unauthenticated push moved the branch")
		}
		wrong := map[string]string{"http.extraHeader": "Authorization: Basic " +
			base64.StdEncoding.EncodeToString([]byte("x-access-token:not-the-token"))}
		if out, err := gitCmd(t, w, wrong, "push", url, "task/1"); err == nil {
			t.Fatalf("push with a wrong token succeeded: %s", out)
		}
		if out, err := gitCmd(t, w, auth, "push", "--quiet", url, "task/1"); err != nil {
			t.Fatalf("push with the header: %v: %s", err, out)
		}
		if got := fx.srv.BranchSHA("task/1"); got != head {
			t.Fatalf("bare task/1 = %s, want pushed %s", got, head)
		}
		got, err := fx.client.GetPull(ctx, p.Number)
		if err != nil || got.HeadSHA != head {
			t.Fatalf("pull head after push = %s (%v), want %s", got.HeadSHA, err, head)
		}
	})
}
