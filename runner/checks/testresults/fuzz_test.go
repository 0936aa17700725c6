package testresults

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds every format arbitrary input and bound: Parse never panics,
// reads no more than max+1 bytes, says when it cut, and keeps its bounds; a report
// held to itself passes its own floor.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if format := formatOf(file); err == nil && format != "" {
			for i, name := range Formats {
				if name == format {
					f.Add(data, uint8(i), uint32(len(data)))
					f.Add(data, uint8(i), uint32(len(data)/2))
				}
			}
		}
	}
	for i := range Formats {
		f.Add([]byte("ok 1\n  ---\n1..9\n    # Subtest: x\n<testcase><![CDATA[]]></testcase>\ntest a ... ok\n"), uint8(i), uint32(0))
	}
	f.Fuzz(func(t *testing.T, data []byte, format uint8, max uint32) {
		name := Formats[int(format)%len(Formats)]
		limit := int64(max % (1 << 20))
		r := &countingReader{r: bytes.NewReader(data)}
		rep, err := Parse(name, r, limit)
		if limit <= 0 {
			limit = DefaultMax
		}
		if r.n > limit+1 {
			t.Fatalf("read %d bytes with max %d", r.n, limit)
		}
		if rep.Truncated != errors.Is(err, ErrTruncated) || rep.Truncated != (int64(len(data)) > limit) {
			t.Fatalf("truncated %v, err %v, %d bytes, max %d", rep.Truncated, err, len(data), limit)
		}
		if rep.Format != name || rep.Pass+rep.Fail+rep.Skip != len(rep.Results) {
			t.Fatalf("report %+v", rep)
		}
		seen := map[string]bool{}
		for _, res := range rep.Results {
			if seen[res.Name] {
				t.Fatalf("%q twice", res.Name)
			}
			seen[res.Name] = true
			if len(res.Name) > MaxNameBytes || len(res.Message) > MaxMessageBytes || !utf8.ValidString(res.Message) {
				t.Fatalf("name %d bytes, message %d bytes %q", len(res.Name), len(res.Message), res.Message)
			}
			if res.Status != StatusPass && res.Status != StatusFail && res.Status != StatusSkip {
				t.Fatalf("status %q", res.Status)
			}
		}
		fl := Floor(rep, rep)
		if !fl.OK() || fl.AtBase != rep.Pass || len(fl.Diagnosis()) > MaxDiagnosisBytes {
			t.Fatalf("floor of a report to itself: %+v", fl)
		}
		if d := Floor(rep, Report{}).Diagnosis(); len(d) > MaxDiagnosisBytes || !utf8.ValidString(d) {
			t.Fatalf("diagnosis %d bytes", len(d))
		}
	})
}

type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
