package models

import (
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/contract"
)

func TestParallelGroupsValidate(t *testing.T) {
	step := func(group string) Step {
		return Step{Role: "developer", Brief: "b", Parallel: group, Completion: contract.Completion{Type: contract.CompletionNone}}
	}
	ok := &Template{Name: "ok", Steps: []Step{step(""), step("Build "), step("build"), step(""), step("docs"), step("docs")}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("consecutive groups refused: %v", err)
	}
	if ok.Steps[1].Parallel != "build" {
		t.Fatalf("group not normalized: %q", ok.Steps[1].Parallel)
	}
	if got := Stages(ok.Steps); !slices.EqualFunc(got, [][]int{{0}, {1, 2}, {3}, {4, 5}}, slices.Equal[[]int]) {
		t.Fatalf("stages %v", got)
	}
	if got := StageOf(ok.Steps, 2); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("StageOf(2) = %v", got)
	}
	split := &Template{Name: "split", Steps: []Step{step("build"), step(""), step("build")}}
	err := split.Validate()
	e, _ := err.(*Error)
	if e == nil || e.Rule != RuleParallelConsecutive || !strings.Contains(e.Fields["steps[2].parallel"], "consecutive") {
		t.Fatalf("split group: %#v", err)
	}
	bad := &Template{Name: "bad", Steps: []Step{step("no spaces!")}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.(*Error).Fields["steps[0].parallel"], "lower-case") {
		t.Fatalf("bad group name: %v", err)
	}
}

func TestOnExhaustedValidate(t *testing.T) {
	for _, v := range []string{"", "block", " Proceed_With_Warnings "} {
		c := contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone}, Review: &contract.Review{Role: "reviewer", OnExhausted: v}}
		c.Normalize()
		if err := c.Validate(); err != nil {
			t.Fatalf("%q refused: %v", v, err)
		}
	}
	c := contract.Contract{Completion: contract.Completion{Type: contract.CompletionNone}, Review: &contract.Review{Role: "reviewer", OnExhausted: "retry"}}
	c.Normalize()
	e, _ := c.Validate().(*Error)
	if e == nil || e.Rule != contract.RuleReviewOnExhausted || e.Fields["review.on_exhausted"] == "" {
		t.Fatalf("retry: %#v", e)
	}
	if (&contract.Review{OnExhausted: contract.OnExhaustedProceed}).ProceedsWithWarnings() == false || (&contract.Review{}).ProceedsWithWarnings() {
		t.Fatal("ProceedsWithWarnings")
	}
}

func TestReviewFindingsAndSummary(t *testing.T) {
	fb := "## Feedback for Revision\nIntro line.\n- first finding\n* second finding\n1. third finding\n- fourth finding"
	if got := ReviewFindings(fb, 3); !slices.Equal(got, []string{"first finding", "second finding", "third finding"}) {
		t.Fatalf("findings %q", got)
	}
	if got := ReviewFindings("one line\n\nanother line", 3); !slices.Equal(got, []string{"one line", "another line"}) {
		t.Fatalf("plain findings %q", got)
	}
	if FindingSummary("") != "the reviewer's findings" {
		t.Fatal("empty summary")
	}
	s := ReviewSummary{Index: 2, Round: 1, MaxRounds: 3, Status: "REVIEW_FAIL", Findings: []string{"a", "b"}, Action: ReviewActionFixTask}.String()
	want := "Review of step 2, round 1 of 3\n- Status: REVIEW_FAIL\n- Findings:\n  - a\n  - b\n- Action: fix task added"
	if s != want {
		t.Fatalf("summary\n%s\nwant\n%s", s, want)
	}
	if s := (ReviewSummary{Round: 1, MaxRounds: 3, Status: "REVIEW_PASS", Action: ReviewActionProceeded}).String(); !strings.HasPrefix(s, "Review of the task,") || !strings.Contains(s, "- Findings: none") {
		t.Fatalf("summary %q", s)
	}
}

func TestFieldRule(t *testing.T) {
	fe := FieldErrors{"a": "must be x (rule some_rule)", "b": "is required"}
	if e := fe.Err().(*Error); e.Rule != "some_rule" {
		t.Fatalf("rule %q", e.Rule)
	}
	if e := (FieldErrors{"a": "is (required)"}).Err().(*Error); e.Rule != "" {
		t.Fatalf("rule %q from a message without one", e.Rule)
	}
}

func TestAddReviewFixTaskRunnerOnly(t *testing.T) {
	s := &Service{}
	_, err := s.Attempts.AddReviewFixTask(t.Context(), nil, &Agent{ID: 5, Name: "lee", Roles: []string{RoleLead}}, &Task{ID: 1}, ReviewFix{})
	if e, _ := err.(*Error); e == nil || e.Code != EFORBIDDEN || e.Rule != RuleReviewFixRunner {
		t.Fatalf("a person adding a review's fix task: %v", err)
	}
}
