package models

import "testing"

// TestAttemptForReaderHidesHeldOutDetail: which held-out tests failed, with their
// messages and the withheld output, reach only those who may read held-out tests; the
// count reaches everyone, and the stored attempt is not changed.
func TestAttemptForReaderHidesHeldOutDetail(t *testing.T) {
	a := Attempt{Judge: &JudgeReport{Base: "b", HeldOut: &HeldOutReport{Files: 1, Failed: []string{"TestBig: want 14"}, Detail: "--- FAIL: TestBig"}}}
	lead := &Agent{Name: "lena", Roles: []string{RoleLead}}
	worker := &Agent{Name: "w", Kind: KindWorker, Roles: []string{"developer"}}
	scoped := &Agent{Name: "bot", Roles: []string{RoleLead}, Scope: &TokenScope{TaskID: 1}}
	if got := a.ForReader(lead).Judge.HeldOut; len(got.Failed) != 1 || got.Detail == "" {
		t.Errorf("the lead reads %+v", got)
	}
	for _, r := range []*Agent{worker, scoped, nil} {
		got := AttemptsForReader(r, []Attempt{a})[0].Judge
		if got.HeldOut.Failed != nil || got.HeldOut.Detail != "" || got.HeldOut.FailedCount != 1 || got.HeldOut.Files != 1 || got.Base != "b" {
			t.Errorf("%v reads %+v", r, got.HeldOut)
		}
	}
	if len(a.Judge.HeldOut.Failed) != 1 || a.Judge.HeldOut.Detail == "" {
		t.Error("redacting changed the attempt itself")
	}
}
