package models

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	if Percentile(nil, 50) != nil {
		t.Fatal("percentile of nothing is not nil")
	}
	for _, c := range []struct {
		vals    []int64
		p       int
		want    int64
		comment string
	}{
		{[]int64{7}, 50, 7, "one value"},
		{[]int64{7}, 90, 7, "one value"},
		{[]int64{1, 2, 3, 4}, 50, 2, "even count: the lower middle"},
		{[]int64{1, 2, 3, 4, 5}, 50, 3, "odd count: the middle"},
		{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 90, 9, "ten values: the ninth"},
		{[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 90, 10, "eleven values: rank ceil(9.9) = 10"},
	} {
		if got := Percentile(c.vals, c.p); got == nil || *got != c.want {
			t.Errorf("%s: p%d of %v = %v, want %d", c.comment, c.p, c.vals, got, c.want)
		}
	}
}

func TestRate(t *testing.T) {
	if Rate(1, 0) != nil {
		t.Fatal("a rate of nothing is not nil")
	}
	if r := Rate(1, 4); r == nil || *r != 0.25 {
		t.Fatalf("Rate(1, 4) = %v", r)
	}
}

func TestBlockKinds(t *testing.T) {
	for stage, want := range map[string]string{
		StageProcess: BlockWork, StageVerify: BlockWork, StageReview: BlockWork, StageTamper: BlockWork, StageEvaluation: BlockWork,
		StageInfra: BlockInfra, StageReadiness: BlockInfra,
		StageBudget: BlockOther, StageQuestion: BlockOther, "": BlockOther,
		StageImpossible: BlockImpossible,
	} {
		if got := BlockKindOf(stage); got != want {
			t.Errorf("BlockKindOf(%q) = %q, want %q", stage, got, want)
		}
	}
}

func TestStatsDaysAndWindow(t *testing.T) {
	for _, d := range []int{7, 30} {
		if err := CheckStatsDays(d); err != nil {
			t.Fatalf("%d days refused: %v", d, err)
		}
	}
	for _, d := range []int{0, 1, 14, 31, -7} {
		err := CheckStatsDays(d)
		if ErrorCode(err) != EINVALID || err.(*Error).Fields["days"] == "" {
			t.Fatalf("%d days: %v", d, err)
		}
	}
	now := time.Date(2025, 3, 9, 23, 59, 0, 0, time.FixedZone("x", 3600))
	since, until := StatsWindow(now, 7)
	if want := time.Date(2025, 3, 3, 0, 0, 0, 0, time.UTC); !since.Equal(want) || !until.Equal(now) {
		t.Fatalf("window %v – %v, want from %v", since, until, want)
	}
}

func TestDailyBarsOneBarPerDay(t *testing.T) {
	since := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	until := time.Date(2025, 3, 30, 18, 0, 0, 0, time.UTC)
	v := time.Date(2025, 3, 2, 23, 0, 0, 0, time.UTC)
	bars := DailyBars(since, until, []AttemptFact{
		{TaskID: 1, Outcome: OutcomePassed, State: TaskVerified, VerifiedAt: &v},
		{TaskID: 2, Outcome: OutcomePassed, State: TaskVerified, Override: true, VerifiedAt: &v},
	}, []BlockFact{{TaskID: 3, At: until}, {TaskID: 4, At: since.Add(-time.Hour)}})
	if len(bars) != 30 {
		t.Fatalf("%d bars for 30 days", len(bars))
	}
	if bars[1].Verified != 1 || bars[29].Blocked != 1 || bars[0].Blocked != 0 {
		t.Fatalf("bars: %+v %+v %+v", bars[0], bars[1], bars[29])
	}
}

func TestDurationHistogramEdges(t *testing.T) {
	bins := DurationHistogram([]int64{0, 59_999, 60_000, 7_200_000, 10_000_000})
	if len(bins) != 9 || bins[0].Label != "<1m" || bins[8].Label != "≥2h" || bins[6].Label != "30m–1h" {
		t.Fatalf("bins: %+v", bins)
	}
	if bins[0].Count != 2 || bins[1].Count != 1 || bins[8].Count != 2 {
		t.Fatalf("counts: %+v", bins)
	}
}

func TestTakeVerdicts(t *testing.T) {
	v := time.Now()
	sc := ComputeScorecard(7, v, v, []AttemptFact{
		{TaskID: 1, Outcome: OutcomeInfra}, {TaskID: 1, Outcome: OutcomePassed, State: TaskVerified, VerifiedAt: &v}, // infra is no revision
		{TaskID: 2, Outcome: OutcomePassed, State: TaskVerified, Rejections: 1, VerifiedAt: &v}, // a rejection is
		{TaskID: 3, Outcome: OutcomePassed, State: TaskVerified, Override: true},                // accepted: not verified by checks
		{TaskID: 4, Outcome: OutcomeRunning},
	}, []BlockFact{{TaskID: 3, Stage: StageBudget, At: v}})
	if sc.Taken != 4 || sc.Verified != 2 || sc.FirstPass != 1 || sc.Revised != 1 || sc.BlockedOther != 1 || sc.Blocked != 1 {
		t.Fatalf("%+v", sc)
	}
	if sc.MedianMS != nil {
		t.Fatal("a median of attempts that never finished")
	}
}

// TestFailedLastAttemptIsNoRevision: a task with max_attempts 1 whose only attempt
// failed (it blocked, no revision left) was not revised; a failed attempt followed by
// another is, and an infrastructure retry is not a revision of the work.
func TestFailedLastAttemptIsNoRevision(t *testing.T) {
	v := time.Now()
	sc := ComputeScorecard(7, v, v, []AttemptFact{
		{TaskID: 1, Outcome: OutcomeFailed, State: TaskBlocked}, // no revision left
		{TaskID: 2, Outcome: OutcomeFailed}, {TaskID: 2, Outcome: OutcomePassed, State: TaskVerified, VerifiedAt: &v},
		{TaskID: 3, Outcome: OutcomeFailed}, {TaskID: 3, Outcome: OutcomeInfra, State: TaskBlocked},
	}, []BlockFact{{TaskID: 1, Stage: StageVerify, At: v}, {TaskID: 3, Stage: StageInfra, At: v}})
	if sc.Taken != 3 || sc.Revised != 1 || sc.RevisionRate == nil || *sc.RevisionRate != 1.0/3 {
		t.Fatalf("revised %d of %d (rate %v), want 1 of 3", sc.Revised, sc.Taken, sc.RevisionRate)
	}
}

func TestGoalProgressBurnDownCapped(t *testing.T) {
	d := func(n int) time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n) }
	p := ComputeGoalProgress(GoalProgressFacts{
		Created: []DayCount{{d(0), 10}, {d(50), 2}},
		Done:    []DayCount{{d(1), 3}, {d(45), 4}},
	}, d(0), d(59).Add(5*time.Hour))
	if len(p.BurnDown) != GoalProgressDays || !p.BurnDown[0].Day.Equal(d(30)) {
		t.Fatalf("%d days from %v", len(p.BurnDown), p.BurnDown[0].Day)
	}
	if p.BurnDown[0].Left != 7 || p.BurnDown[15].Left != 3 || p.BurnDown[29].Left != 5 {
		t.Fatalf("burn-down %+v", p.BurnDown)
	}
	if p.TopStage != "" {
		t.Fatalf("top stage %q without failures", p.TopStage)
	}
}

// TestScorecardCountsUsageMismatches: every attempt flagged for a usage report that
// differs from the gateway's meter counts, a running one too (the flag is about what
// the worker said, not how it ended); unflagged ones do not.
func TestScorecardCountsUsageMismatches(t *testing.T) {
	v := time.Now()
	sc := ComputeScorecard(7, v, v, []AttemptFact{
		{TaskID: 1, Outcome: OutcomeFailed, UsageMismatch: true},
		{TaskID: 1, Outcome: OutcomePassed, State: TaskVerified, VerifiedAt: &v},
		{TaskID: 2, Outcome: OutcomeRunning, UsageMismatch: true},
		{TaskID: 3, Outcome: OutcomePassed},
	}, nil)
	if sc.UsageMismatches != 2 {
		t.Fatalf("usage mismatches = %d, want 2", sc.UsageMismatches)
	}
	if none := ComputeScorecard(7, v, v, []AttemptFact{{TaskID: 1, Outcome: OutcomePassed}}, nil); none.UsageMismatches != 0 {
		t.Fatalf("usage mismatches without a flag = %d", none.UsageMismatches)
	}
}

// TestImpossibleIsNeitherFailureNorBlock: a take whose worker said the task is
// impossible, blocked on that claim, counts in Impossible and in none of the blocks,
// the block rate or the daily bars; a failed take blocked by its work still counts.
func TestImpossibleIsNeitherFailureNorBlock(t *testing.T) {
	now := time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC)
	since, until := StatsWindow(now, 7)
	at := now.Add(-time.Hour)
	attempts := []AttemptFact{
		{TaskID: 1, AgentID: 1, Outcome: OutcomeImpossible, Stage: StageImpossible, StartedAt: at, FinishedAt: &at, State: TaskBlocked},
		{TaskID: 2, AgentID: 1, Outcome: OutcomeFailed, Stage: StageVerify, StartedAt: at, FinishedAt: &at, State: TaskBlocked},
	}
	blocks := []BlockFact{{TaskID: 1, Stage: StageImpossible, At: at}, {TaskID: 2, Stage: StageVerify, At: at}}
	sc := ComputeScorecard(7, since, until, attempts, blocks)
	if sc.Impossible != 1 || sc.Blocked != 1 || sc.BlockedWork != 1 || sc.BlockedOther != 0 || sc.Taken != 2 || *sc.BlockRate != 0.5 {
		t.Fatalf("scorecard %+v", sc)
	}
	blockedBars := 0
	for _, b := range DailyBars(since, until, attempts, blocks) {
		blockedBars += b.Blocked
	}
	if blockedBars != 1 {
		t.Fatalf("daily bars count %d blocks, want 1", blockedBars)
	}
}
