package pages

import "testing"

// TestWithoutServerPath: a summary the runner wrote with the output's absolute path
// (before it named outputs by their workspace path) shows without it; one naming the
// workspace path, or none, is unchanged.
func TestWithoutServerPath(t *testing.T) {
	for in, want := range map[string]string{
		"advisory: attempt 1 finished cleanly; its output needs a person's look; output /srv/data/work/tasks/3/3/findings.md": "advisory: attempt 1 finished cleanly; its output needs a person's look",
		"attempt 2 passed the runner's checks (process, mechanical); output 3/findings.md":                                    "attempt 2 passed the runner's checks (process, mechanical); output 3/findings.md",
		"done it": "done it",
		"":        "",
	} {
		if got := withoutServerPath(in); got != want {
			t.Errorf("withoutServerPath(%q) = %q, want %q", in, got, want)
		}
	}
}
