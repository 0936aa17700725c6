package compare

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteScaleOut prints the scale-out points as a table, one row per measurement,
// then the acceptance lines of issue #34: each measured figure beside its target and
// a verdict. The four-process figures are those of the row with the most processes.
func WriteScaleOut(w io.Writer, points []ScalePoint) error {
	var b strings.Builder
	fmt.Fprintf(&b, "load average %s; window: 10 %% to 90 %% of the tasks finished; lock waits sampled every %s\n", loadAverage(), SampleEvery)
	const format = "%-11s %5s %5s %5s %7s %7s %6s %9s %9s %8s %8s %8s %8s\n"
	fmt.Fprintf(&b, format, "system", "procs", "slots", "tasks", "ideal/s", "tasks/s", "ideal",
		"lock-wait", "cross-wait", "waiters", "cpu proc", "backends", "workers")
	for _, p := range points {
		fmt.Fprintf(&b, format, p.System, fmt.Sprint(p.Procs), fmt.Sprint(p.Slots), fmt.Sprint(p.Tasks),
			fmt.Sprintf("%.1f", p.Ideal()), fmt.Sprintf("%.1f", p.Rate()), fmt.Sprintf("%.2f", p.Rate()/p.Ideal()),
			pct(p.LockAny), pct(p.LockCross), fmt.Sprintf("%.2f", p.Waiters),
			ms(p.perTask(p.Self)), ms(p.perTask(p.Backend)), ms(p.perTask(p.Children)))
	}
	b.WriteString("(cpu columns: ms per task of the measured processes, of their PostgreSQL backends, and of the workers they waited for)\n")
	for _, p := range points {
		for _, q := range p.Blockers {
			fmt.Fprintf(&b, "  %s, %d procs: waited for: %s\n", p.System, p.Procs, q)
		}
	}
	b.WriteString(acceptance(points))
	_, err := io.WriteString(w, b.String())
	return err
}

// acceptance returns issue #34's scale-out lines: measured against target.
func acceptance(points []ScalePoint) string {
	one, four := pick(points, SystemCountersign)
	rOne, rFour := pick(points, SystemRiver)
	if one == nil || four == nil {
		return "acceptance: no countersign rows\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "acceptance (issue #34), countersign with %d processes:\n", four.Procs)
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "NOT MET"
	}
	ofIdeal := four.Rate() / four.Ideal()
	fmt.Fprintf(&b, "  of ideal            %6.2f    want >= %.2f   %s\n", ofIdeal, TargetOfIdeal, verdict(ofIdeal >= TargetOfIdeal))
	scale := four.Rate() / one.Rate()
	fmt.Fprintf(&b, "  %d procs / 1 proc     %6.2fx   want >= %.1fx   %s", four.Procs, scale, TargetScaleRatio, verdict(scale >= TargetScaleRatio))
	if rOne != nil && rFour != nil {
		fmt.Fprintf(&b, "   (River %.2fx)", rFour.Rate()/rOne.Rate())
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "  cross-process lock  %6s    want < %s     %s\n", pct(four.LockCross), pct(TargetLockCross), verdict(four.LockCross < TargetLockCross))
	if rOne == nil || rFour == nil {
		return b.String()
	}
	for _, pair := range [][2]*ScalePoint{{one, rOne}, {four, rFour}} {
		c, r := pair[0].CPUPerTask(), pair[1].CPUPerTask()
		x := float64(c) / float64(r)
		fmt.Fprintf(&b, "  cpu/task, %d procs   %s ms against River's %s ms: %.2fx   want <= %.1fx   %s\n",
			pair[0].Procs, ms(c), ms(r), x, TargetCPUOfRiver, verdict(x <= TargetCPUOfRiver))
	}
	return b.String()
}

// pick returns system's single-process point and its point with the most processes.
func pick(points []ScalePoint, system string) (one, most *ScalePoint) {
	for i := range points {
		p := &points[i]
		if p.System != system {
			continue
		}
		if p.Procs == 1 && one == nil {
			one = p
		}
		if p.Procs > 1 && (most == nil || p.Procs > most.Procs) {
			most = p
		}
	}
	return one, most
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }
