package components

import (
	"testing"
	"time"
)

// TestRelativeText: the words static/time.js writes too, past and future, and the wait.
func TestRelativeText(t *testing.T) {
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ago   time.Duration
		style string
		want  string
	}{
		{12 * time.Second, timeAgo, "12s ago"},
		{5*time.Minute + 10*time.Second, timeAgo, "5 min ago"},
		{3*time.Hour + 59*time.Minute, timeAgo, "3 h ago"},
		{49 * time.Hour, timeAgo, "2 d ago"},
		{-3 * time.Minute, timeAgo, "in 3 min"},
		{40 * 24 * time.Hour, timeAgo, "19 Oct 2026"},
		{36 * time.Second, timeWaiting, "waiting 36s"},
		{3*time.Hour + 20*time.Minute, timeWaiting, "waiting 3h 20m"},
		{-time.Minute, timeWaiting, "waiting 0s"},
	} {
		if got := relativeText(now.Add(-c.ago), now, c.style); got != c.want {
			t.Errorf("relativeText(-%s, %s) = %q, want %q", c.ago, c.style, got, c.want)
		}
	}
}
