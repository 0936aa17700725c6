package pages

import (
	"strconv"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/web/components"
	"github.com/countersign/countersign/web/pages/task"
)

// usageCompareView sets the usage an attempt is charged beside the worker's own
// report: for usage the model gateway metered, or usage with a report kept beside it
// (models.ReconcileUsage). Nil otherwise: a worker's report alone is the usage line.
func usageCompareView(u *models.Usage) *task.UsageCompare {
	if u == nil || (u.Source != models.UsageMetered && u.Reported == nil) {
		return nil
	}
	out := &task.UsageCompare{Metered: u.Source == models.UsageMetered, Charged: usageFigures(u), Mismatch: u.Mismatch}
	if u.Reported != nil {
		r := usageFigures(u.Reported)
		out.Reported = &r
	}
	return out
}

// usageFigures writes u's tokens and cost for people, "—" for unknown.
func usageFigures(u *models.Usage) task.UsageFigures {
	f := task.UsageFigures{Tokens: "—", Cost: "—"}
	if n := u.Tokens(); n != nil {
		f.Tokens = grouped(*n)
	}
	if u.CostUSD != nil {
		f.Cost = contract.USD(*u.CostUSD)
	}
	return f
}

// grouped writes n with thousands separators: 1,234,567.
func grouped(n int64) string {
	if n < 0 {
		return "-" + grouped(-n)
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// networkView is the egress proxy's log of an attempt for people; nil for none.
func networkView(n *models.NetworkLog) *task.Network {
	if n == nil {
		return nil
	}
	out := &task.Network{Allow: n.Allow, Allowed: n.Allowed, Denied: n.Denied, BytesUp: components.Bytes(n.BytesUp),
		BytesDown: components.Bytes(n.BytesDown), Dropped: n.Dropped}
	for _, e := range n.Entries {
		out.Entries = append(out.Entries, task.NetworkEntry{Method: e.Method, Target: e.Host + ":" + strconv.Itoa(e.Port),
			Allowed: e.Allowed, Reason: e.Reason, Up: components.Bytes(e.Up), Down: components.Bytes(e.Down), Time: ms(e.MS)})
	}
	return out
}
