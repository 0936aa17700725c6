package testresults

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// formatOf tells a fixture's format by its extension.
func formatOf(file string) string {
	return map[string]string{".json": FormatGoTestJSON, ".xml": FormatJUnitXML, ".tap": FormatTAP, ".txt": FormatCargoTest, ".jest": FormatJestJSON}[filepath.Ext(file)]
}

// parseFixture parses testdata/file and fails the test on an error.
func parseFixture(t testing.TB, file string) Report {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Parse(formatOf(file), f, 0)
	if err != nil {
		t.Fatalf("Parse(%s): %v", file, err)
	}
	return rep
}

// parseString parses s in format with max bytes.
func parseString(format, s string, max int64) (Report, error) {
	return Parse(format, strings.NewReader(s), max)
}

// statuses maps each result's name to its status.
func statuses(rep Report) map[string]Status {
	m := map[string]Status{}
	for _, r := range rep.Results {
		m[r.Name] = r.Status
	}
	return m
}

// checkResults compares a report's results with want, and its counts with them.
func checkResults(t *testing.T, rep Report, want map[string]Status) {
	t.Helper()
	got := statuses(rep)
	var diffs []string
	for name, st := range want {
		if got[name] != st {
			diffs = append(diffs, name+": got "+string(got[name])+", want "+string(st))
		}
	}
	for name, st := range got {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, name+": unexpected "+string(st))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("results differ:\n  %s", strings.Join(diffs, "\n  "))
	}
	if len(got) != len(rep.Results) {
		t.Errorf("%d results for %d names", len(rep.Results), len(got))
	}
	var p, f, s int
	for _, st := range want {
		switch st {
		case StatusPass:
			p++
		case StatusFail:
			f++
		case StatusSkip:
			s++
		}
	}
	if rep.Pass != p || rep.Fail != f || rep.Skip != s {
		t.Errorf("counts pass/fail/skip = %d/%d/%d, want %d/%d/%d", rep.Pass, rep.Fail, rep.Skip, p, f, s)
	}
}

// message returns the message of the result called name.
func messageOf(rep Report, name string) string {
	for _, r := range rep.Results {
		if r.Name == name {
			return r.Message
		}
	}
	return ""
}

// all gives every name in names the status st.
func all(st Status, names ...string) map[string]Status {
	m := map[string]Status{}
	for _, n := range names {
		m[n] = st
	}
	return m
}

// merge joins status maps.
func merge(ms ...map[string]Status) map[string]Status {
	out := map[string]Status{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// readFixture returns testdata/file.
func readFixture(t testing.TB, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
