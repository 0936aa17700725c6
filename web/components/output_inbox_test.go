package components

import (
	"strings"
	"testing"
)

// TestOutputViewUpTo: the inbox's view of a long output holds OutputInboxBytes of it
// at most, says so, and still offers "show all" of that part and the download.
func TestOutputViewUpTo(t *testing.T) {
	data := []byte(strings.Repeat("- a finding of the report\n", 4*OutputInboxBytes/26) + "THE END\n")
	v := NewOutputViewUpTo(7, "findings.md", int64(len(data)), data[:OutputInboxBytes+1], OutputInboxBytes)
	html := renderOutput(t, v)
	if !v.Cut || !v.More || v.Limit != OutputInboxBytes || strings.Contains(html, "THE END") {
		t.Fatalf("cut %v more %v limit %d, or the end is shown", v.Cut, v.More, v.Limit)
	}
	if got := strings.Count(html, "a finding of the report"); got > OutputInboxBytes/26+1 {
		t.Errorf("%d findings shown, more than %d bytes hold", got, OutputInboxBytes)
	}
	for _, want := range []string{"Only the first 16.0 KiB are shown here; the download has all of it.", `data-testid="out-show-all"`, `href="/tasks/7/output"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the view lacks %q", want)
		}
	}
	if page := NewOutputView(7, "findings.md", int64(len(data)), data); page.Cut || page.Limit != OutputPageBytes {
		t.Errorf("the task page's view of %d bytes: cut %v, limit %d", len(data), page.Cut, page.Limit)
	}
}
