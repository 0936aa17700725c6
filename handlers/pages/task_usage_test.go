package pages_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/models"
)

func i64p(v int64) *int64     { return &v }
func f64p(v float64) *float64 { return &v }

// meteredAttempts are three attempts: one metered with the worker's differing report
// (flagged) and an egress log with a denied host whose name is markup and connections
// beyond those kept; one metered without a report; one with the worker's report only.
func meteredAttempts() []models.Attempt {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	flagged := models.Attempt{Outcome: models.OutcomeFailed, Stage: models.StageVerify, Diagnosis: "exit 1",
		Usage: models.ReconcileUsage(
			&models.Usage{InputTokens: i64p(12000), OutputTokens: i64p(3400), CostUSD: f64p(0.75), Model: "claude-sonnet-4-5"},
			&models.Usage{InputTokens: i64p(100), OutputTokens: i64p(20), CostUSD: f64p(0.01), Turns: ptrInt(3)}),
		Network: &models.NetworkLog{Allow: []string{"proxy.golang.org"}, Allowed: 3, Denied: 2, BytesUp: 2048, BytesDown: 3 << 20, Dropped: 3,
			Entries: []models.NetworkEntry{
				{At: at, Method: "CONNECT", Host: "proxy.golang.org", Port: 443, Allowed: true, Up: 2048, Down: 3 << 20, MS: 1500},
				{At: at, Method: "CONNECT", Host: "<img src=x onerror=alert(1)>.example", Port: 443, Reason: "host not in the allowlist", MS: 2},
			}}}
	quiet := models.Attempt{Outcome: models.OutcomeFailed, Stage: models.StageVerify, Diagnosis: "exit 1",
		Usage: models.ReconcileUsage(&models.Usage{InputTokens: i64p(500), CostUSD: f64p(0.002), Model: "claude-haiku-4-5"}, nil)}
	reported := models.Attempt{Outcome: models.OutcomeFailed, Stage: models.StageVerify, Diagnosis: "exit 1",
		Usage: &models.Usage{InputTokens: i64p(700), CostUSD: f64p(0.02), CostSource: models.CostReported}}
	return []models.Attempt{flagged, quiet, reported}
}

func ptrInt(v int) *int { return &v }

// attemptBlock cuts attempt n's section out of a task page.
func attemptBlock(t *testing.T, body string, n int) string {
	t.Helper()
	start := strings.Index(body, `data-testid="attempt-`+itoa64(int64(n))+`"`)
	if start < 0 {
		t.Fatalf("no attempt %d on the page", n)
	}
	end := strings.Index(body[start:], `data-testid="attempt-`+itoa64(int64(n+1))+`"`)
	if end < 0 {
		return body[start:]
	}
	return body[start : start+end]
}

// TestTaskPageMeteredUsageAndNetwork: per attempt, the task page sets the usage the
// gateway metered beside the worker's report (tokens and cost each), flags a report
// that differs beyond tolerance with the mismatch in words, says "nothing reported"
// when the worker reported nothing, and shows no comparison for a report alone. The
// egress log shows its counts, every kept connection (host:port, allowed or denied
// with the reason, bytes each way, time; a hostile host name escaped) and how many more
// were not kept.
func TestTaskPageMeteredUsageAndNetwork(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	e.team()
	tk := e.judgedTask("Meter the worker", false, meteredAttempts()...)
	r := e.browser().login("dev").get("/tasks/" + itoa64(tk.ID))
	if r.Status != http.StatusOK {
		t.Fatalf("task page: %d", r.Status)
	}
	a1 := attemptBlock(t, r.Body, 1)
	cell := func(block, testid string) string {
		m := regexp.MustCompile(`data-testid="` + testid + `">\s*([^<]*?)\s*<`).FindStringSubmatch(block)
		if m == nil {
			return "<missing>"
		}
		return m[1]
	}
	for testid, want := range map[string]string{
		"usage-charged-tokens": "15,400", "usage-reported-tokens": "120",
		"usage-charged-cost": "$0.75", "usage-reported-cost": "$0.01",
	} {
		if got := cell(a1, testid); got != want {
			t.Errorf("attempt 1 %s = %q, want %q", testid, got, want)
		}
	}
	for _, want := range []string{
		`data-testid="usage-mismatch"`, "the worker reported a cost of $0.01; the gateway metered $0.75",
		`data-testid="usage-mismatch-badge"`, "Metered (gateway)",
		`data-testid="network-log"`, "3 allowed · 2 denied · 2.0 KiB up · 3.0 MiB down",
		`<code>proxy.golang.org:443</code>`, `data-allowed="allowed"`, "1.5s",
		`<code>&lt;img src=x onerror=alert(1)&gt;.example:443</code>`, `data-allowed="denied"`,
		`data-testid="network-reason">host not in the allowlist</span>`,
		`data-testid="network-dropped">3 more not kept.</p>`, "<details open>",
	} {
		if !strings.Contains(a1, want) {
			t.Errorf("attempt 1 lacks %q", want)
		}
	}
	if strings.Contains(r.Body, "<img src=x") {
		t.Error("a host name from the egress log is rendered unescaped")
	}

	a2 := attemptBlock(t, r.Body, 2)
	if cell(a2, "usage-charged-tokens") != "500" || !strings.Contains(a2, "nothing reported") {
		t.Errorf("attempt 2 (metered, no report) does not say the worker reported nothing:\n%s", a2)
	}
	for i, block := range []string{a2, attemptBlock(t, r.Body, 3)} {
		for _, absent := range []string{`data-testid="usage-mismatch"`, `data-testid="usage-mismatch-badge"`, `data-testid="network-log"`} {
			if strings.Contains(block, absent) {
				t.Errorf("attempt %d shows %s", i+2, absent)
			}
		}
	}
	a3 := attemptBlock(t, r.Body, 3)
	if strings.Contains(a3, `data-testid="usage-compare"`) || !strings.Contains(a3, `data-testid="attempt-usage"`) {
		t.Error("attempt 3 (the worker's report alone) is not shown as its usage line only")
	}
}
