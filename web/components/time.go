package components

import (
	"fmt"
	"time"
)

// Time styles understood by the <time> component (timeEl) and static/time.js, which
// keeps the text current in the viewer's browser.
const (
	timeAgo     = "ago"     // "12s ago", "5 min ago", "in 3 h", "28 Nov 2026"
	timeWaiting = "waiting" // "waiting 36s", "waiting 3h 20m"
)

// relativeText is what a <time> of the given style says at now. static/time.js
// writes the same words (keep the two in step), so a page reads the same before and
// after its script runs, and then ticks.
func relativeText(t, now time.Time, style string) string {
	d := now.Sub(t)
	if style == timeWaiting {
		return "waiting " + span(max(d, 0))
	}
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 24*time.Hour:
		s = fmt.Sprintf("%d h", int(d.Hours()))
	case d < 30*24*time.Hour:
		s = fmt.Sprintf("%d d", int(d.Hours())/24)
	default:
		return t.UTC().Format("2 Jan 2006")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// span says a duration the way a person reads a wait: 45s, 12m, 3h 20m, 2d 4h.
func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd %dh", int(d.Hours())/24, int(d.Hours())%24)
}

// absoluteUTC is a <time>'s title before static/time.js replaces it with the same
// moment in the viewer's time zone: the full date and time, in UTC.
func absoluteUTC(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
