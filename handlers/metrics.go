package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/countersign/countersign/models"
)

// Metrics is the Prometheus registry of one process: gauges read from the database at
// scrape time (tasks by state, ledger backlog), counters and a histogram the runner
// feeds (attempts by outcome and stage, dispatch latency), and the number of live
// WebSocket clients. It satisfies the runner's Observer.
type Metrics struct {
	reg      *prometheus.Registry
	attempts *prometheus.CounterVec
	dispatch prometheus.Histogram
	tokens   *prometheus.CounterVec
	cost     *prometheus.CounterVec
}

// NewMetrics returns the metrics of a process over store; wsClients, when set,
// reports the number of connected WebSocket clients.
func NewMetrics(store models.Store, wsClients func() int) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_attempts_total", Help: "Worker attempts finished, by outcome and by the stage that failed (empty when passed).",
		}, []string{"outcome", "stage"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_tokens_total", Help: "Tokens the attempts of this process's runner used, by agent and kind (input, output, cache_read, cache_write).",
		}, []string{"agent", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_cost_usd_total", Help: "Cost in USD of the attempts of this process's runner whose cost is known, by agent.",
		}, []string{"agent"}),
		dispatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "countersign_dispatch_latency_seconds", Help: "Time from a task becoming ready to its worker process starting.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
	}
	m.reg.MustRegister(m.attempts, m.dispatch, m.tokens, m.cost, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&dbCollector{store: store})
	if wsClients != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "countersign_websocket_clients", Help: "Connected dashboard WebSocket clients.",
		}, func() float64 { return float64(wsClients()) }))
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Dispatched records one dispatch latency.
func (m *Metrics) Dispatched(d time.Duration) { m.dispatch.Observe(d.Seconds()) }

// AttemptFinished counts one finished attempt.
func (m *Metrics) AttemptFinished(outcome, stage string) {
	m.attempts.WithLabelValues(outcome, stage).Inc()
}

// Used counts what one finished attempt of agent used; unknown fields count nothing.
func (m *Metrics) Used(agent string, u *models.Usage) {
	if u == nil {
		return
	}
	for kind, n := range map[string]*int64{"input": u.InputTokens, "output": u.OutputTokens, "cache_read": u.CacheReadTokens, "cache_write": u.CacheWriteTokens} {
		if n != nil {
			m.tokens.WithLabelValues(agent, kind).Add(float64(*n))
		}
	}
	if u.CostUSD != nil {
		m.cost.WithLabelValues(agent).Add(*u.CostUSD)
	}
}

// dbCollector reads the gauges that live in the database when scraped, so that every
// process reports the same truth and nothing needs updating on each change.
type dbCollector struct{ store models.Store }

var (
	tasksDesc   = prometheus.NewDesc("countersign_tasks", "Tasks by state.", []string{"state"}, nil)
	backlogDesc = prometheus.NewDesc("countersign_ledger_backlog", "Ledger entries not yet posted.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) { ch <- tasksDesc; ch <- backlogDesc }

// Collect implements prometheus.Collector.
func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if counts, err := c.store.CountTasks(ctx, 0); err != nil {
		ch <- prometheus.NewInvalidMetric(tasksDesc, err)
	} else {
		for _, st := range models.TaskStates {
			ch <- prometheus.MustNewConstMetric(tasksDesc, prometheus.GaugeValue, float64(counts[st]), string(st))
		}
	}
	if n, err := c.store.CountLedger(ctx, models.LedgerPending); err != nil {
		ch <- prometheus.NewInvalidMetric(backlogDesc, err)
	} else {
		ch <- prometheus.MustNewConstMetric(backlogDesc, prometheus.GaugeValue, float64(n))
	}
}
