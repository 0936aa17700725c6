package handlers_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers"
	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/store/storetest"
)

// TestMetricsCountUsage: what attempts used reaches /metrics as tokens by agent and
// kind and cost by agent; an unknown field counts nothing (no made-up zero series).
func TestMetricsCountUsage(t *testing.T) {
	m := handlers.NewMetrics(storetest.Open(t, "sqlite"), nil)
	in, out, cost := int64(1200), int64(300), 0.25
	m.Used("quinn", &models.Usage{InputTokens: &in, OutputTokens: &out, CostUSD: &cost})
	m.Used("quinn", &models.Usage{InputTokens: &in})
	m.Used("silent", nil)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`countersign_tokens_total{agent="quinn",kind="input"} 2400`,
		`countersign_tokens_total{agent="quinn",kind="output"} 300`,
		`countersign_cost_usd_total{agent="quinn"} 0.25`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, absent := range []string{`kind="cache_read"`, `agent="silent"`} {
		if strings.Contains(string(body), absent) {
			t.Errorf("/metrics has %s, which nothing reported", absent)
		}
	}
}
