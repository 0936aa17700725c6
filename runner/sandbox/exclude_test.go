package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A grant that contains the data dir is replaced by everything beside the way down
// to it; grants inside it and elsewhere stay.
func TestExcluding(t *testing.T) {
	top := t.TempDir()
	data := filepath.Join(top, "srv", "countersign", "data")
	for _, d := range []string{data, filepath.Join(top, "srv", "other"), filepath.Join(top, "srv", "countersign", "bin"), filepath.Join(data, "work")} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(top, "srv", "countersign", "README"), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	p := Policy{ReadExec: []string{"/usr", filepath.Join(top, "srv")}, ReadWrite: []string{filepath.Join(data, "work")}}.Excluding(data)
	want := []string{"/usr", filepath.Join(top, "srv", "other"), filepath.Join(top, "srv", "countersign", "README"), filepath.Join(top, "srv", "countersign", "bin")}
	slices.Sort(want)
	got := slices.Clone(p.ReadExec)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("read grants %q, want %q", got, want)
	}
	for _, g := range got {
		if strings.HasPrefix(data, g+"/") || g == data {
			t.Errorf("%s still reaches the data dir", g)
		}
	}
	if !slices.Equal(p.ReadWrite, []string{filepath.Join(data, "work")}) {
		t.Errorf("a grant inside the data dir changed: %q", p.ReadWrite)
	}
	if root := (Policy{ReadExec: []string{"/"}}).Excluding(data); slices.Contains(root.ReadExec, "/") || len(root.ReadExec) == 0 {
		t.Errorf("a grant of / is not expanded: %q", root.ReadExec)
	}
}
