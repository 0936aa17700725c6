//go:build linux && (amd64 || arm64)

package runner

import (
	"context"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/gateway"
	"github.com/countersign/countersign/runner/sandbox"
)

// providerSecret is the provider's key, which only the gateway holds.
const providerSecret = "sk-ant-countersign-provider-secret-e2e"

// callModel is a shell function a test worker calls the model with through
// ANTHROPIC_BASE_URL: one loop call (it offers a tool, so the scripted API answers
// with its next turn's usage) padded with pad bytes of prompt; it prints the status.
func callModel(pad int) string {
	return `call() { curl -s -o /dev/null -w '%{http_code}' "$ANTHROPIC_BASE_URL/v1/messages" -H "x-api-key: $ANTHROPIC_API_KEY" ` +
		`-H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' -d "{\"model\":\"` + claudeModel + `\",\"max_tokens\":100,` +
		`\"tools\":[{\"name\":\"x\",\"input_schema\":{\"type\":\"object\"}}],\"messages\":[{\"role\":\"user\",\"content\":\"` +
		strings.Repeat("x", pad) + `\"}]}"; }; `
}

// withGateway gives the pool a model gateway in front of api, holding the provider's
// key, and confines runs in a private network where the machine can make one.
func withGateway(t *testing.T, api *fakeAnthropic, private bool) func(*Config) {
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		t.Fatalf("the sandbox must work on this machine: %s", sb.Status())
	}
	gw, err := gateway.New(gateway.Config{Anthropic: gateway.Upstream{BaseURL: api.URL, Key: providerSecret}, Prices: models.DefaultPrices()})
	must(t, err)
	svc := gateway.NewService(gw, "127.0.0.1:0")
	must(t, svc.Start(context.Background()))
	t.Cleanup(func() { _ = svc.Stop(context.Background()) })
	return func(c *Config) {
		c.Sandbox, c.ConnectPorts, c.Gateway, c.GatewayService, c.PrivateNetwork = sb, []uint16{}, gw, svc, private
	}
}

// TestMeteredUsageIsTheUsage: with the model gateway, an attempt is charged what the
// gateway metered from the provider's responses, whatever its worker says: an honest
// report is kept beside the meter, a report of $0 is flagged, silence is charged
// too, and under a $0.05 budget a worker that reports $0 is stopped at stage budget
// by the gateway, having spent no more than the budget.
func TestMeteredUsageIsTheUsage(t *testing.T) {
	turn := fakeTurn{Blocks: []fakeBlock{{Text: "ok"}}, Usage: fakeUsage{Input: 6000, Output: 100}}
	// Each call: 6,000 input and 100 output tokens of Sonnet 4.5, $0.0195.
	const perCall = (6000*3 + 100*15) / 1e6
	two := callModel(16000) + `call >/dev/null; call >/dev/null; `
	cases := []struct {
		name, worker string
		budget       float64
		calls        int
		mismatch     bool
		budgetStop   bool
	}{
		{name: "honest", worker: two + `printf '{"usage":{"input_tokens":12000,"output_tokens":200},"model":"` + claudeModel + `"}' > "$COUNTERSIGN_USAGE_FILE"; echo TASK_COMPLETE`, calls: 2},
		{name: "reports-zero", worker: two + `printf '{"total_cost_usd":0}' > "$COUNTERSIGN_USAGE_FILE"; echo TASK_COMPLETE`, calls: 2, mismatch: true},
		{name: "silent", worker: two + `echo TASK_COMPLETE`, calls: 2},
		{name: "budget", budget: 0.05, budgetStop: true, calls: 2, mismatch: true,
			worker: callModel(12000) + `for i in 1 2 3 4 5 6 7 8; do [ "$(call)" = 200 ] || break; done; printf '{"total_cost_usd":0}' > "$COUNTERSIGN_USAGE_FILE"; echo TASK_COMPLETE`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			api := newFakeAnthropic(t, claudeModel, turn, turn, turn, turn, turn, turn, turn, turn)
			h := newHarness(t, "sqlite", withGateway(t, api, false))
			h.worker("w", "dev", c.worker)
			ct := contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
				Verification: contract.Verification{Type: contract.VerifySkip}}
			if c.budget > 0 {
				ct.Budget = &contract.Budget{MaxCostUSD: &c.budget}
			}
			tk := h.task("Use the model", "dev", ct)
			h.start()
			got := h.settled(tk.ID, 2*time.Minute)
			atts := h.attempts(tk.ID)
			last := atts[len(atts)-1]
			if n := len(api.loopCalls()); n != c.calls {
				t.Fatalf("the upstream saw %d calls, want %d: %s", n, c.calls, api.report())
			}
			u := last.Usage
			if u == nil || u.Source != models.UsageMetered || u.CostUSD == nil {
				t.Fatalf("the attempt's usage is not metered: %s", usageText(u))
			}
			if want := float64(c.calls) * perCall; math.Abs(*u.CostUSD-want) > 1e-9 || *u.InputTokens != int64(c.calls)*6000 {
				t.Errorf("charged %s, %d input tokens; the upstream billed $%.4f, %d", usageText(u), *u.InputTokens, want, c.calls*6000)
			}
			if c.mismatch != (u.Mismatch != "") {
				t.Errorf("mismatch %q, want flagged=%v", u.Mismatch, c.mismatch)
			}
			if c.budgetStop {
				if got.State != models.TaskBlocked || last.Stage != models.StageBudget || got.AttemptsUsed != 0 {
					t.Fatalf("the task is %s, stage %q, %d charged: want blocked at stage budget, uncharged: %s", got.State, last.Stage, got.AttemptsUsed, last.Diagnosis)
				}
				if *u.CostUSD > c.budget {
					t.Errorf("spent %s past the budget of %s", contract.USD(*u.CostUSD), contract.USD(c.budget))
				}
				return
			}
			if got.State != models.TaskVerified {
				t.Fatalf("the task is %s: %s", got.State, last.Diagnosis)
			}
		})
	}
}

// TestTheKeyAndTheNetworkStayWithCountersign: a worker in a private network with the
// gateway never sees the provider's key (environment, files, /proc), cannot reach the
// upstream model API directly nor another host on 443, and its denied attempt through the
// egress proxy is logged on the attempt; with the gateway and the private network off
// (the key passed to the worker, the upstream's port open, as before) each succeeds,
// so the test can fail.
func TestTheKeyAndTheNetworkStayWithCountersign(t *testing.T) {
	probe := `out=$PROBE_OUT; : > $out; ` +
		`(env; cat /proc/*/environ 2>/dev/null; grep -rs "` + providerSecret + `" "$HOME" /tmp 2>/dev/null) | tr '\0' '\n' | grep -q "` + providerSecret + `" && echo key-seen >> $out; ` +
		`[ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' --noproxy '*' -X HEAD "$UPSTREAM/")" = 200 ] && echo upstream-reached >> $out; ` +
		`curl -s -m 5 -o /dev/null --noproxy '*' https://example.com/ && echo internet-reached >> $out; ` +
		`[ "$(curl -s -m 5 --noproxy '*' "http://$OTHER_HOST/")" = other ] && echo other-host-reached >> $out; ` +
		`curl -s -m 5 -o /dev/null -w '%{http_connect}' https://example.com/ | grep -q 403 && echo proxy-denied >> $out; ` +
		`echo TASK_COMPLETE`
	run := func(t *testing.T, on bool) (string, *models.Attempt) {
		api := newFakeAnthropic(t, claudeModel)
		t.Setenv("ANTHROPIC_API_KEY", providerSecret)
		t.Setenv("UPSTREAM", api.URL)
		t.Setenv("OTHER_HOST", otherHost443(t))
		mut := withGateway(t, api, true)
		if !on {
			sb := sandbox.Probe(sandbox.ModeOn)
			mut = func(c *Config) { c.Sandbox, c.ConnectPorts = sb, []uint16{uint16(api.Port), 443} }
		}
		h := newHarness(t, "sqlite", mut)
		if on {
			if ok, why := h.cfg.Sandbox.NetworkIsolation(); !ok {
				t.Fatalf("the private network must work on this machine: %s", why)
			}
		}
		outFile := filepath.Join(h.root, "probe.txt")
		t.Setenv("PROBE_OUT", outFile)
		h.worker("w", "dev", probe, func(a *models.Agent) {
			a.PassEnv = []string{"ANTHROPIC_API_KEY", "UPSTREAM", "PROBE_OUT", "OTHER_HOST"}
			a.Sandbox.Write = []string{h.root}
		})
		tk := h.task("Probe", "dev", contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: contract.Verification{Type: contract.VerifySkip}})
		h.start()
		h.settled(tk.ID, 2*time.Minute)
		b, err := os.ReadFile(outFile)
		must(t, err)
		atts := h.attempts(tk.ID)
		return string(b), &atts[len(atts)-1]
	}
	t.Run("defended", func(t *testing.T) {
		got, att := run(t, true)
		for _, bad := range []string{"key-seen", "upstream-reached", "internet-reached", "other-host-reached"} {
			if strings.Contains(got, bad) {
				t.Errorf("the worker got through: %s", bad)
			}
		}
		if !strings.Contains(got, "proxy-denied") {
			t.Errorf("the egress proxy did not answer 403: %q", got)
		}
		n := att.Network
		if n == nil || n.Denied < 1 || len(n.Entries) == 0 || n.Entries[0].Host != "example.com" || n.Entries[0].Allowed {
			t.Errorf("the attempt's network log does not show the denied connection: %+v", n)
		}
	})
	t.Run("defences-off", func(t *testing.T) {
		got, _ := run(t, false)
		for _, want := range []string{"key-seen", "upstream-reached", "other-host-reached"} {
			if !strings.Contains(got, want) {
				t.Errorf("without the gateway the worker should have %s: %q", want, got)
			}
		}
	})
}

// TestEightMeteredAttemptsUnderOneCap: eight tasks of a goal with a $0.10 budget start
// together (one agent of concurrency 8), each worker calling the model until the
// gateway refuses and reporting $0. The goal's metered spend passes the cap by at
// most the calls in flight when it was reached (each attempt reserves what is left
// before it starts, and the gateway holds it to that mid-call): measured, and logged.
func TestEightMeteredAttemptsUnderOneCap(t *testing.T) {
	turns := make([]fakeTurn, 64)
	for i := range turns {
		turns[i] = fakeTurn{Blocks: []fakeBlock{{Text: "ok"}}, Usage: fakeUsage{Input: 6000, Output: 100}}
	}
	api := newFakeAnthropic(t, claudeModel, turns...)
	h := newHarness(t, "sqlite", withGateway(t, api, false))
	h.worker("spender", "dev", callModel(12000)+`for i in 1 2 3 4 5 6 7 8; do [ "$(call)" = 200 ] || break; done; printf '{"total_cost_usd":0}' > "$COUNTERSIGN_USAGE_FILE"; echo TASK_COMPLETE`,
		func(a *models.Agent) { a.Concurrency = 8 })
	capUSD := 0.10
	g := &models.Goal{Title: "Capped", Budget: &contract.Budget{MaxCostUSD: &capUSD}}
	must(t, h.svc.Goals.CreateGoal(h.ctx, h.boss, g))
	var ids []int64
	for i := 0; i < 8; i++ {
		tk := h.task("Spend "+itoa(int64(i)), "dev", contract.Contract{
			Completion:   contract.Completion{Type: contract.CompletionNone, DoneToken: "TASK_COMPLETE", MaxAttempts: 1},
			Verification: contract.Verification{Type: contract.VerifySkip}}, func(s *models.TaskSpec) { s.GoalID = &g.ID })
		ids = append(ids, tk.ID)
	}
	h.start()
	for _, id := range ids {
		if tk := h.settled(id, 3*time.Minute); tk.State == models.TaskVerified {
			t.Errorf("task %d was verified: its worker never stops calling until refused, so it ends at the budget", id)
		}
	}
	spend, err := h.db.SpendOf(h.ctx, models.SpendScope{GoalID: g.ID})
	must(t, err)
	const perCall = (6000*3 + 100*15) / 1e6
	over := spend.CostUSD - capUSD
	t.Logf("goal cap %s: metered spend %s over %d upstream calls; above the cap by %s (one call is %s)",
		contract.USD(capUSD), contract.USD(spend.CostUSD), len(api.loopCalls()), contract.USD(max(over, 0)), contract.USD(perCall))
	if spend.CostUSD <= 0 || float64(len(api.loopCalls()))*perCall-spend.CostUSD > 1e-9 {
		t.Errorf("the goal was charged %s for %d calls of %s each", contract.USD(spend.CostUSD), len(api.loopCalls()), contract.USD(perCall))
	}
	if over > 0 {
		t.Errorf("the goal's spend passed its cap by %s: attempts under one cap must reserve before they call", contract.USD(over))
	}
}

// otherHost443 serves "other" on port 443 of one of this machine's own non-loopback
// addresses, standing for another host on 443: the port every run could reach before
// the private network. It returns host:443.
func otherHost443(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	must(t, err)
	for _, a := range addrs {
		ip, ok := a.(*net.IPNet)
		if !ok || ip.IP.IsLoopback() || ip.IP.To4() == nil {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.IP.String(), "443"))
		if err != nil {
			t.Fatalf("listening on %s:443 as another host: %v", ip.IP, err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("other")) }),
			ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return ln.Addr().String()
	}
	t.Fatal("this machine has no non-loopback IPv4 address to stand for another host")
	return ""
}
