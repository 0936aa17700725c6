package testresults

import (
	"fmt"
	"sort"
	"strings"
)

// Bounds on what a FloorResult lists and says.
const (
	// MaxListedNames bounds FloorResult.NotRun and FloorResult.FailedNames.
	MaxListedNames = 20
	// MaxDiagnosisBytes bounds Diagnosis.
	MaxDiagnosisBytes = 1024
	// maxDiagnosisName bounds one name in a diagnosis.
	maxDiagnosisName = 160
)

// FloorResult holds a later run to the tests that passed at the base revision:
// AtBase of them passed there; of those, Run ran now (Passed passed, Failed failed),
// Skipped were skipped and Missing did not appear at all. NotRun names the skipped
// and missing ones and FailedNames the failed ones, each sorted and cut to
// MaxListedNames (the counts are whole).
type FloorResult struct {
	AtBase      int      `json:"at_base"`
	Run         int      `json:"run"`
	Passed      int      `json:"passed"`
	Skipped     int      `json:"skipped"`
	Missing     int      `json:"missing"`
	Failed      int      `json:"failed"`
	NotRun      []string `json:"not_run,omitempty"`
	FailedNames []string `json:"failed_names,omitempty"`
}

// Floor compares the tests that passed at the base with a later run: every test
// that passed at the base must run and pass now, neither skipped, failed nor
// missing. Tests new in the later run do not matter to it.
func Floor(base, now Report) FloorResult {
	current := make(map[string]Status, len(now.Results))
	for _, r := range now.Results {
		if old, ok := current[r.Name]; !ok || severity(r.Status) > severity(old) {
			current[r.Name] = r.Status
		}
	}
	var f FloorResult
	seen := map[string]bool{}
	for _, r := range base.Results {
		if r.Status != StatusPass || seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		f.AtBase++
		st, ok := current[r.Name]
		switch {
		case !ok:
			f.Missing++
			f.NotRun = append(f.NotRun, r.Name)
		case st == StatusSkip:
			f.Skipped++
			f.NotRun = append(f.NotRun, r.Name)
		case st == StatusFail:
			f.Run++
			f.Failed++
			f.FailedNames = append(f.FailedNames, r.Name)
		default:
			f.Run++
			f.Passed++
		}
	}
	f.NotRun = sortedHead(f.NotRun)
	f.FailedNames = sortedHead(f.FailedNames)
	return f
}

func sortedHead(names []string) []string {
	sort.Strings(names)
	if len(names) > MaxListedNames {
		names = names[:MaxListedNames]
	}
	return names
}

// OK says whether every test that passed at the base ran and passed.
func (f FloorResult) OK() bool { return f.Passed == f.AtBase }

// Diagnosis says what the floor found in at most MaxDiagnosisBytes: on a failure the
// counts, then each test that did not run ("pkg.TestAdd did not run") and each that
// failed, names quoted when they hold control characters and cut when long.
func (f FloorResult) Diagnosis() string {
	if f.AtBase == 0 {
		return "no test passed at the base revision: the floor holds nothing"
	}
	if f.OK() {
		return fmt.Sprintf("all %d tests that passed at the base revision ran and passed", f.AtBase)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d tests that passed at the base revision did not pass now (%d skipped, %d missing, %d failed): ",
		f.AtBase-f.Passed, f.AtBase, f.Skipped, f.Missing, f.Failed)
	var parts []string
	for _, n := range f.NotRun {
		parts = append(parts, diagnosisName(n)+" did not run")
	}
	for _, n := range f.FailedNames {
		parts = append(parts, diagnosisName(n)+" failed")
	}
	unlisted := f.Skipped + f.Missing + f.Failed - len(parts)
	for i, p := range parts {
		sep := "; "
		if i == 0 {
			sep = ""
		}
		tail := fmt.Sprintf("%sand %d more", sep, len(parts)-i+unlisted)
		if b.Len()+len(sep)+len(p)+len(tail) > MaxDiagnosisBytes {
			b.WriteString(tail)
			return b.String()
		}
		b.WriteString(sep + p)
	}
	if unlisted > 0 {
		fmt.Fprintf(&b, "; and %d more", unlisted)
	}
	return b.String()
}

// diagnosisName makes a test name safe to print: quoted if it holds anything but
// printable characters, cut to maxDiagnosisName bytes.
func diagnosisName(name string) string {
	if p := printable(name); p != name {
		name = fmt.Sprintf("%q", name)
	}
	if len(name) > maxDiagnosisName {
		name = cutRunes(name, maxDiagnosisName-len("…")) + "…"
	}
	return name
}
