package checks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks/testresults"
)

// resultsSeq names results files apart within one process.
var resultsSeq atomic.Int64

// runResultsCommand runs a criterion's structured-results variant and parses what it
// reports: its standard output, or the file named by {results_file}. The command's
// exit status decides the criterion as for any other command, except that with
// req.Expect a failure of only the judge's must-fail canary passes (see
// ExpectedFailures); the results name the tests.
func runResultsCommand(ctx context.Context, dir string, j verifyJob, req VerifyRequest, env []string) (commandOutcome, *TestRun) {
	run := &TestRun{Criterion: j.index}
	command := j.command
	var file string
	var stdout *boundedBuffer
	if strings.Contains(command, contract.ResultsFilePlaceholder) {
		if req.ResultsDir == "" {
			run.Err = errors.New("no directory for the results file")
			return runCheckCommand(ctx, dir, strings.ReplaceAll(command, contract.ResultsFilePlaceholder, "/dev/null"), req.Timeout, env, req.Confine, nil), run
		}
		file = filepath.Join(req.ResultsDir, fmt.Sprintf("results-%d.out", resultsSeq.Add(1)))
		command = strings.ReplaceAll(command, contract.ResultsFilePlaceholder, shellQuote(file))
	} else {
		stdout = &boundedBuffer{max: maxResultsBytes}
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = contract.DefaultVerifyTimeout
	}
	if req.Expect != nil {
		env = append(append([]string(nil), env...), req.Expect.Env...)
	}
	out, run := runAndParse(ctx, dir, command, file, stdout, timeout, env, j, req, run)
	out = req.Expect.judge(out, run)
	if req.Expect != nil {
		out.tail = scrubCanary(out.tail)
	}
	return out, run
}

// scrubCanary drops the lines of an output tail that mention a canary: the judge's
// canaries stay out of diagnoses and briefs.
func scrubCanary(tail string) string {
	lines := strings.Split(tail, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !strings.Contains(strings.ToLower(l), "canary") {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

// runAndParse runs a results command and parses its results from stdout or file.
func runAndParse(ctx context.Context, dir, command, file string, stdout *boundedBuffer, timeout time.Duration, env []string, j verifyJob, req VerifyRequest, run *TestRun) (commandOutcome, *TestRun) {
	var out commandOutcome
	if stdout != nil {
		out = runCheckCommand(ctx, dir, command, timeout, env, req.Confine, stdout)
		run.Report, run.Err = testresults.Parse(j.results.Format, bytes.NewReader(stdout.Bytes()), maxResultsBytes)
		if out.verdict != models.VerdictPass && strings.TrimSpace(out.tail) == "" {
			// The results went to stdout; what the run said besides them is its tail.
			out.tail = formatTail(stdout.Tail(TailSize), int64(stdout.Len()))
		}
		return out, run
	}
	out = runCheckCommand(ctx, dir, command, timeout, env, req.Confine, nil)
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		run.Err = fmt.Errorf("reading the results file: %w", err)
		return out, run
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		run.Err = errors.New("the results file is not a regular file")
		return out, run
	}
	run.Report, run.Err = testresults.Parse(j.results.Format, f, maxResultsBytes)
	return out, run
}

// failingTests names the failed tests of rep for a diagnosis, each with its message:
// whole (bounded) normally, only its first line when withhold (held-out tests' source
// must not reach the worker).
func failingTests(rep testresults.Report, withhold bool) string {
	var b strings.Builder
	n := 0
	for _, r := range rep.Results {
		if r.Status != testresults.StatusFail {
			continue
		}
		if n++; n > 20 {
			fmt.Fprintf(&b, "… and %d more\n", rep.Fail-20)
			break
		}
		msg := strings.TrimSpace(r.Message)
		if withhold {
			msg, _, _ = strings.Cut(msg, "\n")
			msg = quoteLine(msg, 200)
		}
		if msg == "" {
			fmt.Fprintf(&b, "- %s failed\n", r.Name)
		} else if withhold {
			fmt.Fprintf(&b, "- %s failed: %s\n", r.Name, msg)
		} else {
			fmt.Fprintf(&b, "- %s failed:\n%s\n", r.Name, indentLines(msg))
		}
	}
	return fmt.Sprintf("%d test(s) failed:\n%s", rep.Fail, b.String())
}

func indentLines(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// shellQuote quotes s for /bin/sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// boundedBuffer keeps the first max bytes written to it and counts the rest, so a
// command that prints without end costs bounded memory.
type boundedBuffer struct {
	buf   bytes.Buffer
	max   int
	total int64
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.total += int64(len(p))
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *boundedBuffer) Bytes() []byte { return b.buf.Bytes() }
func (b *boundedBuffer) Len() int      { return int(b.total) }

// Tail is the last n bytes kept.
func (b *boundedBuffer) Tail(n int) []byte {
	all := b.buf.Bytes()
	if len(all) <= n {
		return all
	}
	return all[len(all)-n:]
}

// judge passes a results command that failed only by the expected failures: it
// exited with status 1 (a test failed; not a crash, a timeout or a usage error), its
// results were read whole, and every failed test is expected.
func (e *ExpectedFailures) judge(out commandOutcome, run *TestRun) commandOutcome {
	if e == nil || e.Fail == nil || out.verdict != models.VerdictFail || out.exit != 1 || run.Err != nil || run.Report.Truncated {
		return out
	}
	failed := 0
	for _, r := range run.Report.Results {
		if r.Status == testresults.StatusFail {
			if !e.Fail(r.Name) {
				return out
			}
			failed++
		}
	}
	if failed == 0 {
		return out
	}
	out.verdict = models.VerdictPass
	out.how += " (only the judge's must-fail canary failed, as it must)"
	return out
}

// visible is rep without the expected failures, for diagnoses.
func (e *ExpectedFailures) visible(rep testresults.Report) testresults.Report {
	if e == nil || e.Fail == nil {
		return rep
	}
	out := rep
	out.Results, out.Fail = nil, 0
	for _, r := range rep.Results {
		if r.Status == testresults.StatusFail {
			if e.Fail(r.Name) {
				continue
			}
			out.Fail++
		}
		out.Results = append(out.Results, r)
	}
	return out
}
