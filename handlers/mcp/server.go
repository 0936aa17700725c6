// Package mcp serves Countersign's governance tools over the Model Context Protocol
// (streamable HTTP), so that agents such as Claude Code take part in the work through
// the same rules as the JSON API.
//
// The server is stateless: it keeps no MCP session, so every HTTP request stands on
// its own. Identity comes only from the bearer token: each request is authenticated
// with the API's tokens (models.TokenService.Authenticate), and the token's agent is the
// actor of the tool call that request carries. Nothing learnt on one request serves
// another, so a client cannot act as another agent by reusing anything but that
// agent's token, and a revoked token or disabled agent is refused on its very next
// request. The agent_name and creator arguments of the seed's tools are accepted only
// when they name the token's agent (rule agent_is_token_owner).
//
// Every rule is the service's: a refused call is a tool error (IsError) whose text
// names the rule, the task's current state and what is allowed from it, or the bad
// argument, followed by the same error object the API returns.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
)

// Path is where Register mounts the MCP endpoint.
const Path = "/mcp"

// RuleAgentIsTokenOwner names the refusal of a call whose agent_name or creator
// argument is not the agent owning the bearer token: identity is never taken from an
// argument.
const RuleAgentIsTokenOwner = "agent_is_token_owner"

// RuleCompletionByRunner names the refusal of update_task with status completed or
// verified: no tool posts a completion; completion belongs to the runner (or to an
// approver and an independent verifier through approve_task and verify_task).
const RuleCompletionByRunner = "completion_belongs_to_runner"

// agentKey is the TokenInfo.Extra key holding the authenticated *models.Agent.
const agentKey = "countersign.agent"

const instructions = `Countersign governs work: nothing is done until someone other than the doer has checked it.
You act as the agent that owns your bearer token; agent_name and creator arguments are optional and, when given, must be that agent.
Task lifecycle: pending -> assigned -> in_progress -> review -> completed -> verified. The assignee starts a task (update_task status=in_progress), the builder submits it (submit_for_review), a reviewer approves or rejects it (approve_task / reject_task), an independent verifier verifies or rejects it (verify_task / reject_verification).
Separation of duties is enforced: the builder cannot verify; with three or more agents builder, approver and verifier all differ. Rejections need a reason.
A goal becomes pending_verify when all its tasks are verified; only a lead verifies it (verify_goal) after testing the integrated result. To send it back, the lead calls reject_goal with the reason and at least one fix task; the goal is active again until the fix tasks are verified.
No tool marks work completed for you: completion of worker tasks belongs to the runner.`

// New returns the MCP endpoint over svc: the governance tools served over stateless
// streamable HTTP behind bearer-token authentication. version is reported to clients.
// Stateless serving needs no session memory, survives restarts, works behind several
// processes, and is the only mode the SDK offers the newest protocol version in; the
// tools never call back into the client, which is all that sessions would add.
//
// The SDK's DNS-rebinding guard (refusing a loopback connection whose Host is not
// loopback) is off: it exists for servers without credentials, while every request
// here needs a bearer token a rebinding page cannot know, and the guard would refuse
// every request a reverse proxy on the same host forwards with the public Host.
func New(svc *models.Service, log *slog.Logger, version string) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "countersign", Title: "Countersign", Version: version},
		&sdk.ServerOptions{Instructions: instructions})
	t := &tools{svc: services{store: svc.Store(), Tasks: svc.Tasks, Goals: svc.Goals}, log: log}
	t.register(srv)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, DisableLocalhostProtection: true})
	bearer := auth.RequireBearerToken(verifier(svc.Tokens, t.log), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	return challenge(bearer(h))
}

// Register mounts h (from New) at /mcp for every method. Calls are POSTs; the
// transport itself answers the other methods (405 for GET and DELETE, which only a
// server keeping sessions would serve), so clients get MCP's statuses — as JSON-RPC
// errors through the central error handler (handlers.ShapeErrors), never bare text.
// A call whose JSON holds text the store cannot hold (invalid UTF-8, NUL) is refused
// before it reaches a tool, naming the field, like the API's bodies.
func Register(e *echo.Echo, h http.Handler) {
	shaped := handlers.ShapeErrors(h)
	e.Any(Path, func(c echo.Context) error {
		body, err := handlers.ReadBody(c.Request())
		if err != nil {
			return err
		}
		if err := handlers.JSONTextError(body); err != nil {
			return err
		}
		return shaped(c)
	})
}

// authError is a refused credential; it unwraps to auth.ErrInvalidToken so that the
// SDK's middleware answers 401 with its message.
type authError struct{ msg string }

// Error returns the message the client sees with the 401.
func (e authError) Error() string { return e.msg }

// Is makes the error count as auth.ErrInvalidToken.
func (e authError) Is(target error) bool { return target == auth.ErrInvalidToken }

// verifier authenticates a bearer token with the API's tokens, on every request. The
// user id is the agent's id: should the handler ever keep sessions, the SDK would then
// refuse a session opened by one agent when it is used with another agent's token.
func verifier(tokens Authenticator, log *slog.Logger) auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		a, err := tokens.Authenticate(ctx, token)
		if models.ErrorCode(err) == models.EUNAUTHORIZED {
			return nil, authError{msg: models.ErrorMessage(err) + ": create one with `countersign token create AGENT`"}
		}
		if err != nil {
			if ctx.Err() == nil { // a client that went away is not a failure of ours
				log.Error("mcp: authenticating a bearer token", "err", err)
			}
			return nil, errors.New("internal error")
		}
		return &auth.TokenInfo{UserID: "agent:" + strconv.FormatInt(a.ID, 10), Extra: map[string]any{agentKey: a}}, nil
	}
}

// challenge adds the WWW-Authenticate header to 401 answers, as the API does.
func challenge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&challengeWriter{ResponseWriter: w}, r)
	})
}

type challengeWriter struct{ http.ResponseWriter }

// WriteHeader adds the challenge to a 401.
func (w *challengeWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="countersign"`)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer (to flush streams).
func (w *challengeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush passes flushes through for the event streams.
func (w *challengeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// actorOf returns the agent the request carrying this call was authenticated as.
func actorOf(req *sdk.CallToolRequest) (*models.Agent, error) {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return nil, models.Errorf(models.EUNAUTHORIZED, "missing bearer token")
	}
	a, ok := req.Extra.TokenInfo.Extra[agentKey].(*models.Agent)
	if !ok || a == nil {
		return nil, models.Errorf(models.EUNAUTHORIZED, "missing bearer token")
	}
	return a, nil
}

// claim refuses an identity argument that names another agent than the token's.
func claim(a *models.Agent, arg, name string) error {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" || n == a.Name {
		return nil
	}
	return models.Forbidden(RuleAgentIsTokenOwner,
		"%s %q is not the agent this token belongs to: you act as %q, the token's owner; pass %s=%q or leave it out",
		arg, name, a.Name, arg, a.Name)
}

// subject says what a refused transition was about, to name the tools that would help.
type subject int

const (
	aboutTask subject = iota
	aboutGoal
)

// taskActionTools names the tool that takes each task action; actions without a tool
// (assign, retry, reassign, accept, block) belong to the dashboard, the API or the runner.
var taskActionTools = map[string]string{
	string(models.ActStart):              "update_task status=in_progress",
	string(models.ActSubmit):             "submit_for_review",
	string(models.ActApprove):            "approve_task",
	string(models.ActReject):             "reject_task",
	string(models.ActVerify):             "verify_task",
	string(models.ActRejectVerification): "reject_verification",
	string(models.ActReopen):             "reopen_task",
	string(models.ActCancel):             "update_task status=cancelled",
}

var goalActionTools = map[string]string{"verify": "verify_goal", "reject": "reject_goal"}

// elsewhere says where the actions without a tool are taken.
var elsewhere = map[string]string{string(models.ActBlock): "runner only"}

// toolError is a refused call: its text is what the agent reads.
type toolError struct{ text string }

// Error returns the text of the tool error.
func (e *toolError) Error() string { return e.text }

// refusal turns a service error into the text of a tool error: a sentence naming the
// rule, the current state and the allowed actions, or the bad arguments (renamed to
// the tool's argument names), then the API's error object as JSON.
func (t *tools) refusal(tool string, err error, about subject, renames map[string]string) error {
	var de *models.Error
	if !errors.As(err, &de) || de.Code == models.EINTERNAL {
		t.log.Error("mcp: tool failed", "tool", tool, "err", err)
		de = &models.Error{Code: models.EINTERNAL, Message: "internal error"}
	}
	e := *de
	if len(e.Fields) > 0 {
		e.Fields = make(map[string]string, len(de.Fields))
		for k, v := range de.Fields {
			if r, ok := renames[k]; ok {
				k = r
			}
			e.Fields[k] = v
		}
	}
	var b strings.Builder
	switch e.Code {
	case models.EFORBIDDEN:
		fmt.Fprintf(&b, "refused by rule %s: %s", e.Rule, e.Message)
	case models.ECONFLICT:
		fmt.Fprintf(&b, "refused: %s", e.Message)
		if e.State != "" {
			fmt.Fprintf(&b, "; current state: %s", e.State)
			fmt.Fprintf(&b, "; allowed now: %s", allowedText(e.Allowed, about))
		}
	case models.EINVALID:
		fmt.Fprintf(&b, "invalid arguments: %s", e.Message)
		keys := make([]string, 0, len(e.Fields))
		for k := range e.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "; %s: %s", k, e.Fields[k])
		}
	case models.ENOTFOUND:
		fmt.Fprintf(&b, "not found: %s", e.Message)
	default:
		fmt.Fprintf(&b, "%s: %s", e.Code, e.Message)
	}
	j, _ := json.Marshal(map[string]any{"error": e})
	b.WriteString("\n")
	b.Write(j)
	return &toolError{text: b.String()}
}

func allowedText(allowed []string, about subject) string {
	if len(allowed) == 0 {
		return "nothing (this state is final, or waits for someone else)"
	}
	m := taskActionTools
	if about == aboutGoal {
		m = goalActionTools
	}
	parts := make([]string, len(allowed))
	for i, a := range allowed {
		if tool, ok := m[a]; ok {
			parts[i] = a + " (" + tool + ")"
		} else if where, ok := elsewhere[a]; ok {
			parts[i] = a + " (" + where + ")"
		} else {
			parts[i] = a + " (dashboard or API)"
		}
	}
	return strings.Join(parts, ", ")
}
