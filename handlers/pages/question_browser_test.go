package pages_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/labstack/echo/v4"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	mcpserver "github.com/countersign/countersign/handlers/mcp"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/store/storetest"
	"github.com/countersign/countersign/runner"
	"github.com/countersign/countersign/runner/workspace"
)

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestQuestionThroughMCPAnsweredInTheBrowser is issue 18's chain end to end: a real
// worker process, run by the real runner pool, asks a person through MCP with its
// attempt token (the test is its MCP client) and stops; the task waits with no attempt
// used; the exec answers in the inbox in Chromium; the next brief holds the question
// and the answer, and the task is verified.
func TestQuestionThroughMCPAnsweredInTheBrowser(t *testing.T) {
	db := storetest.Open(t, "sqlite")
	mcpHandler := mcpserver.New(handlertest.NewService(db), handlertest.DiscardLog(), "test")
	e := newEnvOn(t, db, envOptions{extra: []func(*echo.Echo){func(ec *echo.Echo) { mcpserver.Register(ec, mcpHandler) }}})
	e.team()
	ctx := context.Background()
	dir := t.TempDir()
	tokenFile, goFile := filepath.Join(dir, "token"), filepath.Join(dir, "go")
	// Until its brief holds the answer, the worker hands its attempt token to its MCP
	// client (this test), waits for the question to be asked, and stops.
	cmd := `brief=$(cat); case "$brief" in *eu-west-1*) printf '%0120d\n' 0 > "$COUNTERSIGN_OUTPUT_PATH"; echo TASK_COMPLETE;; ` +
		`*) printf '%s' "$COUNTERSIGN_TOKEN" > '` + tokenFile + `.tmp' && mv '` + tokenFile + `.tmp' '` + tokenFile + `'; ` +
		`while [ ! -e '` + goFile + `' ]; do sleep 0.05; done; echo "asked"; exit 1;; esac`
	must(t, e.svc.Agents.CreateAgent(ctx, models.System, &models.Agent{Name: "asker", Kind: models.KindWorker, Roles: []string{"analyst"}, Command: cmd}, ""))
	tk, err := e.svc.Tasks.CreateTask(ctx, models.System, models.TaskSpec{Title: "Deploy the service", Brief: "Deploy it where it belongs.", Role: "analyst",
		Contract: contract.Contract{Completion: contract.Completion{Type: contract.CompletionFile, Path: "out/{task_id}.md", MinLength: 100, DoneToken: "TASK_COMPLETE"},
			Verification: contract.Verification{Type: contract.VerifySkip}}})
	must(t, err)

	ws, err := workspace.New(filepath.Join(dir, "work"))
	must(t, err)
	pool, err := runner.New(runner.Config{Service: e.svc, Workspaces: ws, RunnerID: "e2e", APIURL: e.srv.URL,
		Lease: 5 * time.Second, Poll: 200 * time.Millisecond, Grace: 2 * time.Second, KillGrace: 200 * time.Millisecond, Log: handlertest.DiscardLog()})
	must(t, err)
	must(t, pool.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = pool.Stop(sctx)
	})

	var token []byte
	waitFor(t, "the worker's attempt token", func() bool { token, _ = os.ReadFile(tokenFile); return len(token) > 0 })
	client := sdk.NewClient(&sdk.Implementation{Name: "the-worker", Version: "test"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := client.Connect(cctx, &sdk.StreamableClientTransport{Endpoint: e.srv.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token: string(token)}}, MaxRetries: -1}, nil)
	must(t, err)
	defer cs.Close()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "ask_question",
		Arguments: map[string]any{"task_id": tk.ID, "question": "Which region should it run in?"}})
	if err != nil || res.IsError {
		t.Fatalf("ask_question: %v %+v", err, res)
	}
	must(t, os.WriteFile(goFile, nil, 0o644))

	waitFor(t, "the task to wait", func() bool { return e.state(tk.ID) == models.TaskWaiting })
	waiting, err := e.db.GetTask(ctx, tk.ID)
	must(t, err)
	if waiting.AttemptsUsed != 0 || waiting.OpenQuestion() == nil {
		t.Fatalf("waiting: %d attempts used, question %+v", waiting.AttemptsUsed, waiting.OpenQuestion())
	}

	bctx := chrome(t)
	signIn(t, bctx, e, "exec", "/inbox")
	run(t, bctx, "answer in the inbox",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="inbox-form-answer"]`)),
		shot(t, "question"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="inbox-answer-reason"]`), "Run it in eu-west-1."),
		chromedp.Click(chromedp.CSS(`[data-testid="inbox-answer"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="nav-agent"]`)),
	)

	waitFor(t, "the task to be verified", func() bool { return e.state(tk.ID) == models.TaskVerified })
	attempts, err := e.db.ListAttempts(ctx, tk.ID)
	must(t, err)
	if len(attempts) != 2 || attempts[0].Outcome != models.OutcomeQuestion ||
		!strings.Contains(attempts[1].Brief, "Which region should it run in?") || !strings.Contains(attempts[1].Brief, "Run it in eu-west-1.") {
		t.Fatalf("attempts: %d; the second brief:\n%s", len(attempts), attempts[len(attempts)-1].Brief)
	}
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
