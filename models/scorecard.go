package models

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
)

// StatsDays are the windows a scorecard covers: the last 7 or 30 UTC days, today
// included.
var StatsDays = []int{7, 30}

// CheckStatsDays returns an EINVALID error naming the field days and the windows
// allowed unless d is one of StatsDays.
func CheckStatsDays(d int) error {
	if slices.Contains(StatsDays, d) {
		return nil
	}
	return &Error{Code: EINVALID, Message: "validation failed", Fields: map[string]string{"days": "must be 7 or 30"}}
}

// StatsWindow is the window of the last days UTC days ending with now's day: from
// the start of the first day to now.
func StatsWindow(now time.Time, days int) (since, until time.Time) {
	today := DayOf(now)
	return today.AddDate(0, 0, -(days - 1)), now.UTC()
}

// DayOf is the start of t's UTC day.
func DayOf(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// Block kinds: whose failure a block was. A block is a task.blocked inbox item; its
// kind follows from the stage of its last entry (the attempt that ended the round).
const (
	// BlockWork: the worker's output failed a check until its attempts ran out —
	// stages process, contradiction, done_token, mechanical, verify, workspace,
	// evaluation, review and tamper.
	BlockWork = "work"
	// BlockInfra: the work could not be checked — stage infrastructure (the runner
	// or a check layer failed in a row) or readiness (the workspace lacked what the
	// contract needs before any worker ran).
	BlockInfra = "infrastructure"
	// BlockOther: neither the work nor the machinery — stage budget (a spending cap)
	// and question (a question went unanswered).
	BlockOther = "other"
	// BlockImpossible (impossible.go), stage impossible, counts as no block at all.
)

// WorkStages are the check stages whose failure is the worker's, in the runner's
// order: the stages a goal's failing attempts are counted by.
var WorkStages = []string{StageProcess, StageContradiction, StageDoneToken, StageMechanical, StageVerify,
	StageWorkspace, StageEvaluation, StageReview, StageTamper}

// BlockKindOf is the kind of a block whose last entry has stage.
func BlockKindOf(stage string) string {
	switch {
	case slices.Contains(WorkStages, stage):
		return BlockWork
	case stage == StageInfra || stage == StageReadiness:
		return BlockInfra
	case stage == StageImpossible:
		return BlockImpossible
	}
	return BlockOther
}

// StatsQuery selects what a scorecard counts: attempts started, and blocks made, in
// [Since, Until); AgentID and Role (when set) keep one agent's attempts or one task
// role's.
type StatsQuery struct {
	Since, Until time.Time
	AgentID      int64
	Role         string
}

// AttemptFact is one attempt as a scorecard counts it, with its task's standing now.
type AttemptFact struct {
	TaskID     int64
	AgentID    int64
	Outcome    string
	Stage      string
	StartedAt  time.Time
	FinishedAt *time.Time
	CostUSD    *float64
	Tokens     *int64
	// UsageMismatch: the worker's usage report differed from what the model gateway
	// metered beyond tolerance (Usage.Mismatch was set).
	UsageMismatch bool
	// The task's role, state, verifier rejections, whether it was accepted without
	// its checks passing, and when it was verified.
	Role       string
	State      TaskState
	Rejections int
	Override   bool
	VerifiedAt *time.Time
}

// BlockFact is one block: a blocked inbox item, the agent its task was assigned to
// and the stage of its last entry.
type BlockFact struct {
	TaskID int64
	Role   string
	Agent  string // the assignee's name when it was blocked; "" for none
	Stage  string
	At     time.Time
}

// StatsFacts are what the store found for a StatsQuery.
type StatsFacts struct {
	Attempts []AttemptFact
	Blocks   []BlockFact
}

// Scorecard is how work went over a window, for one agent or one task role. The unit
// is a take: a task the agent (or, for a role, anyone) ran an attempt on that started
// in the window, or whose block in the window is the agent's (a task that was not
// ready is blocked before any attempt). Rates are shares of the takes, nil when there
// are none.
type Scorecard struct {
	Days  int       `json:"days"`
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Taken counts takes; Attempts the attempts they ran.
	Taken    int `json:"taken"`
	Attempts int `json:"attempts"`
	// Verified counts takes whose task is verified with its checks passed (an exec's
	// accept of blocked work is not); FirstPass those of them without a revision;
	// Revised takes with a revision: an attempt after a failed one (a failed attempt
	// that was the last, its task blocked, is none), a second passing one, or a
	// verifier's rejection.
	Verified  int `json:"verified"`
	FirstPass int `json:"first_pass"`
	Revised   int `json:"revised"`
	// Blocked counts takes blocked in the window (BlockWork, BlockInfra, BlockOther
	// by their last block).
	Blocked      int `json:"blocked"`
	BlockedWork  int `json:"blocked_work"`
	BlockedInfra int `json:"blocked_infra"`
	BlockedOther int `json:"blocked_other"`

	FirstPassRate  *float64 `json:"first_pass_rate"`
	RevisionRate   *float64 `json:"revision_rate"`
	BlockRate      *float64 `json:"block_rate"`
	WorkBlockRate  *float64 `json:"work_block_rate"`
	InfraBlockRate *float64 `json:"infra_block_rate"`
	// MedianMS and P90MS are of the durations (start to end) of the finished
	// attempts that ran the work (passed or failed); nil when there are none.
	MedianMS *int64 `json:"median_ms"`
	P90MS    *int64 `json:"p90_ms"`
	// Spend is what the finished attempts used.
	Spend Spend `json:"spend"`
	// UsageMismatches counts the attempts flagged because the worker's usage report
	// differed from what the model gateway metered (Usage.Mismatch).
	UsageMismatches int `json:"usage_mismatches"`
	// Impossible counts the attempts whose worker said the task cannot be done as
	// specified (OutcomeImpossible): neither a failure nor a block.
	Impossible int `json:"impossible"`
}

// DayBar is one day of a scorecard's chart: takes verified and blocks that day.
type DayBar struct {
	Day      time.Time `json:"day"`
	Verified int       `json:"verified"`
	Blocked  int       `json:"blocked"`
}

// HistogramBin is one bin of a duration histogram: [MinMS, MaxMS), MaxMS 0 for the
// open last bin.
type HistogramBin struct {
	Label string `json:"label"`
	MinMS int64  `json:"min_ms"`
	MaxMS int64  `json:"max_ms,omitempty"`
	Count int    `json:"count"`
}

// durationEdges are the histogram's bin edges.
var durationEdges = []time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	20 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour}

// take is one task's attempts (of one agent, or of a role) in the window.
type take struct {
	attempts []AttemptFact
	blocks   []BlockFact
}

// groupTakes groups attempts and blocks by task, in the order of first appearance.
func groupTakes(attempts []AttemptFact, blocks []BlockFact) ([]int64, map[int64]*take) {
	var order []int64
	m := map[int64]*take{}
	get := func(id int64) *take {
		t, ok := m[id]
		if !ok {
			t = &take{}
			m[id] = t
			order = append(order, id)
		}
		return t
	}
	for _, a := range attempts {
		t := get(a.TaskID)
		t.attempts = append(t.attempts, a)
	}
	for _, b := range blocks {
		t := get(b.TaskID)
		t.blocks = append(t.blocks, b)
	}
	return order, m
}

// verdict is what one take came to.
func (t *take) verdict() (verified, revised bool, blockKind string) {
	passed, revisions, rejections := 0, 0, 0
	failedBefore := false // a failed attempt not yet followed by a revision
	for _, a := range t.attempts {
		if failedBefore && a.Outcome != OutcomeInfra {
			revisions++ // this attempt revises the failed work
			failedBefore = false
		}
		switch a.Outcome {
		case OutcomePassed:
			passed++
		case OutcomeFailed:
			failedBefore = true
		}
		rejections = max(rejections, a.Rejections)
	}
	if len(t.attempts) > 0 {
		last := t.attempts[len(t.attempts)-1]
		verified = last.State == TaskVerified && !last.Override && passed > 0
	}
	// A failed attempt with no attempt after it (no revision left: the task blocked)
	// revised nothing.
	revised = revisions > 0 || passed > 1 || rejections > 0
	if n := len(t.blocks); n > 0 {
		latest := t.blocks[0]
		for _, b := range t.blocks[1:] {
			if !b.At.Before(latest.At) {
				latest = b
			}
		}
		blockKind = BlockKindOf(latest.Stage)
	}
	return verified, revised, blockKind
}

// ComputeScorecard counts the takes of attempts and blocks (already narrowed to one
// agent or role and the window since..until of days days).
func ComputeScorecard(days int, since, until time.Time, attempts []AttemptFact, blocks []BlockFact) Scorecard {
	sc := Scorecard{Days: days, Since: since, Until: until, Attempts: len(attempts)}
	order, takes := groupTakes(attempts, blocks)
	sc.Taken = len(order)
	for _, id := range order {
		verified, revised, kind := takes[id].verdict()
		if verified {
			sc.Verified++
			if !revised {
				sc.FirstPass++
			}
		}
		if revised {
			sc.Revised++
		}
		switch kind {
		case BlockWork:
			sc.BlockedWork++
		case BlockInfra:
			sc.BlockedInfra++
		case BlockOther:
			sc.BlockedOther++
		}
	}
	sc.Blocked = sc.BlockedWork + sc.BlockedInfra + sc.BlockedOther
	sc.FirstPassRate = Rate(sc.FirstPass, sc.Taken)
	sc.RevisionRate = Rate(sc.Revised, sc.Taken)
	sc.BlockRate = Rate(sc.Blocked, sc.Taken)
	sc.WorkBlockRate = Rate(sc.BlockedWork, sc.Taken)
	sc.InfraBlockRate = Rate(sc.BlockedInfra, sc.Taken)
	durs := Durations(attempts)
	sc.MedianMS, sc.P90MS = Percentile(durs, 50), Percentile(durs, 90)
	for _, a := range attempts {
		if a.UsageMismatch {
			sc.UsageMismatches++
		}
		if a.Outcome == OutcomeImpossible {
			sc.Impossible++
		}
		if a.Outcome == OutcomeRunning {
			continue
		}
		sc.Spend.CostUSD += fval(a.CostUSD)
		sc.Spend.Tokens += val(a.Tokens)
		if a.CostUSD == nil && a.Tokens != nil {
			sc.Spend.Unpriced++
		}
	}
	sc.Spend.CostUSD = math.Round(sc.Spend.CostUSD*1e6) / 1e6
	return sc
}

// Rate is n/of, nil when of is 0.
func Rate(n, of int) *float64 {
	if of == 0 {
		return nil
	}
	r := float64(n) / float64(of)
	return &r
}

// Durations are the milliseconds from start to end of the finished attempts that ran
// the work (passed or failed), ascending.
func Durations(attempts []AttemptFact) []int64 {
	var out []int64
	for _, a := range attempts {
		if a.FinishedAt == nil || (a.Outcome != OutcomePassed && a.Outcome != OutcomeFailed) {
			continue
		}
		out = append(out, max(a.FinishedAt.Sub(a.StartedAt).Milliseconds(), 0))
	}
	slices.Sort(out)
	return out
}

// Percentile is the p-th percentile of sorted by the nearest-rank method (the
// smallest value with at least p % of the values at or below it); nil for none.
func Percentile(sorted []int64, p int) *int64 {
	if len(sorted) == 0 {
		return nil
	}
	rank := int(math.Ceil(float64(p) / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	v := sorted[rank-1]
	return &v
}

// DailyBars has one bar per UTC day from since's day to until's day: the takes
// verified that day (by their task's verification time) and the blocks made (an
// impossible claim's is none).
func DailyBars(since, until time.Time, attempts []AttemptFact, blocks []BlockFact) []DayBar {
	first, last := DayOf(since), DayOf(until)
	var bars []DayBar
	index := map[time.Time]int{}
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		index[d] = len(bars)
		bars = append(bars, DayBar{Day: d})
	}
	order, takes := groupTakes(attempts, nil)
	for _, id := range order {
		t := takes[id]
		verified, _, _ := t.verdict()
		at := t.attempts[len(t.attempts)-1].VerifiedAt
		if !verified || at == nil {
			continue
		}
		if i, ok := index[DayOf(*at)]; ok {
			bars[i].Verified++
		}
	}
	for _, b := range blocks {
		if BlockKindOf(b.Stage) == BlockImpossible {
			continue // the worker's word, not a block (impossible.go)
		}
		if i, ok := index[DayOf(b.At)]; ok {
			bars[i].Blocked++
		}
	}
	return bars
}

// DurationHistogram bins durations (milliseconds) at 1, 2, 5, 10, 20, 30 minutes and
// 1 and 2 hours.
func DurationHistogram(durs []int64) []HistogramBin {
	bins := make([]HistogramBin, len(durationEdges)+1)
	var lo time.Duration
	for i := range bins {
		b := &bins[i]
		b.MinMS = lo.Milliseconds()
		if i < len(durationEdges) {
			b.MaxMS = durationEdges[i].Milliseconds()
			b.Label = ShortDuration(lo) + "–" + ShortDuration(durationEdges[i])
			if i == 0 {
				b.Label = "<" + ShortDuration(durationEdges[i])
			}
			lo = durationEdges[i]
		} else {
			b.Label = "≥" + ShortDuration(lo)
		}
	}
	for _, d := range durs {
		i := sort.Search(len(durationEdges), func(i int) bool { return d < durationEdges[i].Milliseconds() })
		bins[i].Count++
	}
	return bins
}

// ShortDuration writes d for a chart: "45s", "5m", "1h", "1h30m".
func ShortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	}
	return strconv.Itoa(int(d/time.Hour)) + "h" + strconv.Itoa(int(d%time.Hour/time.Minute)) + "m"
}
