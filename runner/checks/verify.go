package checks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/runner/checks/testresults"
	"github.com/countersign/countersign/runner/worker"
)

// TailSize is how much of a command's combined output a diagnosis keeps: the last
// 4 KiB, where compilers and test runners print their summary.
const TailSize = 4 << 10

// killGrace is how long a check command's process group has between SIGTERM and
// SIGKILL, on timeout and for whatever it leaves running once it exits. Long enough
// for a test runner to remove its temporary files, short because nobody is waiting
// for anything of value from it any more.
const killGrace = 2 * time.Second

// defaultEnvKeys are the runner variables a check command sees when the caller passes
// no environment: what tools need to find themselves and Go's caches, so that
// `go test` does not start cold. Everything else of the runner's environment may be a
// secret. Unlike worker.BaseEnv there is no default PATH, LOGNAME, LC_CTYPE or TZ.
var defaultEnvKeys = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "GOPATH", "GOCACHE", "GOMODCACHE"}

// VerifyActivity is the Activity recorded for the contract's verify commands, which
// belong to no criterion.
const VerifyActivity = "verify"

// Environment variables set for a criterion's command, so that a project-wide
// activity command (say "go test -run \"$COUNTERSIGN_CRITERION_PATTERN\" ./...") can
// narrow itself to the criterion. Task data reaches commands only this way, never by
// being spliced into the command text.
const (
	EnvCriterionActivity = "COUNTERSIGN_CRITERION_ACTIVITY"
	EnvCriterionPattern  = "COUNTERSIGN_CRITERION_PATTERN"
)

// verifyJob is one command Verify runs, or records as skipped.
type verifyJob struct {
	activity, description, pattern, command string
	criterion                               bool
	skip                                    string // why it will not run, when set
	index                                   int    // the criterion's index
	results                                 *contract.TestResults
}

// Verify runs the contract's verify commands, then each criterion's command
// (Criterion.Command, else activityCommands[Activity]), in order, each as
// `/bin/sh -c <command>` in dir, in its own process group (killed on timeout), with
// at most timeout per command and only the last TailSize bytes of output kept. A zero
// timeout means contract.DefaultVerifyTimeout: the runner passes the normalised
// contract's verify_timeout, so this guards only a caller holding a raw contract.
//
// The commands come from the contract's author and the project rules, never from task
// data; anything task-specific must come through env (nil env means a minimal
// environment: PATH, HOME, locale and Go cache variables, never the runner's
// secrets). Criterion commands also get EnvCriterionActivity and EnvCriterionPattern.
//
// Every command gets a CriterionResult (Attempts 1). The first command that fails
// (non-zero exit, killed, timed out) fails the check with a diagnosis naming the
// command, how it ended and the tail of its output; the commands after it are not run
// and are recorded as skipped. A criterion with no command is skipped with the reason
// and does not fail the check. A command that cannot be started at all, or a ctx that
// ends, is Verdict error (infrastructure). With nothing to run the check is skipped.
// Criterion.Timing is not interpreted here: the caller drops what it wants deferred.
// Every command runs confined by confine (nil: unconfined): it runs the worker's code.
func Verify(ctx context.Context, dir string, commands []string, criteria []contract.Criterion,
	activityCommands map[string]string, timeout time.Duration, env []string, confine *worker.Confinement) (models.CheckResult, []models.CriterionResult) {
	res, results, _ := VerifyWith(ctx, VerifyRequest{Dir: dir, Commands: commands, Criteria: criteria,
		ActivityCommands: activityCommands, Timeout: timeout, Env: env, Confine: confine})
	return res, results
}

// VerifyRequest is what VerifyWith runs: Verify's arguments, and the criteria whose
// test runner reports structured results.
type VerifyRequest struct {
	Dir              string
	Commands         []string
	Criteria         []contract.Criterion
	ActivityCommands map[string]string
	Timeout          time.Duration
	Env              []string
	Confine          *worker.Confinement
	// Results maps a criterion's index to the variant of its command that reports
	// structured results: that variant runs instead, and its results are parsed.
	Results map[int]contract.TestResults
	// ResultsDir is where a results file ({results_file}) is written: a directory
	// the command may write.
	ResultsDir string
	// Withhold keeps commands' output out of diagnoses (failing tests are named, with
	// the first line of their message): the run holds held-out tests, whose source a
	// test runner may print.
	Withhold bool
	// HeldOut are the held-out tests the run holds; set, it implies Withhold, and the
	// diagnosis counts the failed held-out tests instead of naming them (see
	// withheldFailures): nothing of a held-out test reaches the worker.
	HeldOut []contract.HeldOutTest
	// Withheld, when set, receives what withholding kept out of the diagnosis of the
	// failing command (its failed tests with their whole messages, its last output),
	// for the people who may read held-out tests; never for the worker.
	Withheld func(detail string)
	// Expect, when set, is the judge's canary in the view: see ExpectedFailures.
	Expect *ExpectedFailures
}

// ExpectedFailures are tests the judge put in its view to fail (its must-fail
// canaries). Env is added to the structured-results commands only (the canaries fail
// only there). A results command that exits with status 1, whose results were read
// whole and whose only failed tests are expected, passes: the failure was the one the
// judge asked for. Expected failures never reach a diagnosis.
type ExpectedFailures struct {
	Env  []string
	Fail func(name string) bool
}

// TestRun is the parsed results of one criterion's structured-results command.
type TestRun struct {
	Criterion int // index into VerifyRequest.Criteria
	Report    testresults.Report
	Err       error // the results could not be read (whole or in part)
}

// maxResultsBytes bounds the structured results read from one command.
const maxResultsBytes = 32 << 20

// VerifyWith is Verify with structured results: see VerifyRequest. It returns the
// parsed results of every criterion in req.Results that ran.
func VerifyWith(ctx context.Context, req VerifyRequest) (models.CheckResult, []models.CriterionResult, []TestRun) {
	timeout, env := req.Timeout, req.Env
	start := time.Now()
	if timeout <= 0 {
		timeout = contract.DefaultVerifyTimeout
	}
	if env == nil {
		env = worker.Inherit(defaultEnvKeys...)
	}
	env, dropBytecode := withBytecodeOutside(env)
	defer dropBytecode()
	held := NewWithholding(req.HeldOut)
	if held != nil {
		env = withoutTestCache(env)
	}

	jobs := verifyJobs(req)

	results := make([]models.CriterionResult, 0, len(jobs))
	var runs []TestRun
	var stop *models.CheckResult // set by the first failure or error
	ran, skippedAfter := 0, 0
	for _, j := range jobs {
		r := models.CriterionResult{Activity: j.activity, Command: j.command, Status: models.VerdictSkipped}
		switch {
		case stop != nil:
			r.Error = "not run: an earlier verification command did not pass"
			skippedAfter++
		case j.skip != "":
			r.Error = j.skip
		default:
			ran++
			var run *TestRun
			r, run, stop = runVerifyJob(ctx, req, j, env, timeout, held, start)
			if run != nil {
				runs = append(runs, *run)
			}
		}
		results = append(results, r)
	}

	if stop != nil {
		if skippedAfter > 0 {
			stop.Diagnosis += fmt.Sprintf("\n(%d later verification command(s) not run)", skippedAfter)
		}
		stop.DurationMS = time.Since(start).Milliseconds()
		return *stop, results, runs
	}
	if ran == 0 {
		diag := "no verify commands or criteria to run"
		if len(jobs) > 0 {
			diag = fmt.Sprintf("none of the %d verification item(s) has a command to run", len(jobs))
		}
		return result(models.StageVerify, models.VerdictSkipped, diag, start), results, runs
	}
	return result(models.StageVerify, models.VerdictPass, "", start), results, runs
}

// verifyJobs lists what VerifyWith runs, in order: the verify commands, then the
// criteria, each criterion's command its own or its activity's.
func verifyJobs(req VerifyRequest) []verifyJob {
	var jobs []verifyJob
	for _, c := range req.Commands {
		j := verifyJob{activity: VerifyActivity, command: strings.TrimSpace(c)}
		if j.command == "" {
			j.skip = "empty verify command"
		}
		jobs = append(jobs, j)
	}
	for i, c := range req.Criteria {
		j := verifyJob{activity: c.Activity, description: c.Description, pattern: c.Pattern, criterion: true, index: i}
		j.command = strings.TrimSpace(c.Command)
		if j.command == "" {
			j.command = strings.TrimSpace(req.ActivityCommands[c.Activity])
		}
		if tr, ok := req.Results[i]; ok && j.command != "" {
			j.results = &tr
			j.command = tr.Command
		}
		if j.command == "" {
			j.skip = fmt.Sprintf("no command: the criterion names none and the project rules map none to activity %q", c.Activity)
		}
		jobs = append(jobs, j)
	}
	return jobs
}

// runVerifyJob runs one job of VerifyWith with env (the job's criterion added) and
// returns its result, its test run when it has structured results, and, when it did
// not pass, the check result that stops the verification.
func runVerifyJob(ctx context.Context, req VerifyRequest, j verifyJob, env []string, timeout time.Duration,
	held *Withholding, start time.Time) (models.CriterionResult, *TestRun, *models.CheckResult) {
	dir, confine := req.Dir, req.Confine
	withhold := req.Withhold || held != nil
	r := models.CriterionResult{Activity: j.activity, Command: j.command, Status: models.VerdictSkipped}
	cmdEnv := env
	if j.criterion {
		cmdEnv = append(append([]string(nil), env...),
			EnvCriterionActivity+"="+j.activity, EnvCriterionPattern+"="+j.pattern)
	}
	var out commandOutcome
	var run *TestRun
	if j.results != nil {
		out, run = runResultsCommand(ctx, dir, j, req, cmdEnv)
	} else {
		out = runCheckCommand(ctx, dir, j.command, timeout, cmdEnv, confine, nil)
	}
	r.Attempts = 1
	r.DurationMS = out.duration.Milliseconds()
	r.Status = out.verdict
	if out.verdict != models.VerdictPass {
		visible := run // the run as the worker may hear of it: the canary's expected failure left out
		if run != nil {
			v := *run
			v.Report = req.Expect.visible(run.Report)
			visible = &v
		}
		evidence, short := failureEvidence(out, visible, withhold, held)
		if withhold && req.Withheld != nil {
			req.Withheld(withheldDetail(j, out, visible))
		}
		r.Error = out.how + ": " + short
		res := result(models.StageVerify, out.verdict, describeJob(j)+" "+out.how+"; "+evidence, start)
		return r, run, &res
	}
	return r, run, nil
}

// describeJob names a verify command or criterion for a diagnosis.
func describeJob(j verifyJob) string {
	if !j.criterion {
		return fmt.Sprintf("verify command %q", j.command)
	}
	name := "criterion " + j.activity
	if j.description != "" {
		name += fmt.Sprintf(" (%s)", quoteLine(j.description, 160))
	}
	return fmt.Sprintf("%s: command %q", name, j.command)
}

// commandOutcome is how one check command ended.
type commandOutcome struct {
	verdict  string // pass, fail or error
	how      string // "exited with status 1 after 2.1s", "timed out after 5m and was killed", …
	tail     string
	duration time.Duration
	exit     int // the exit status, when it exited
}

func (o commandOutcome) tailOrNone() string {
	if strings.TrimSpace(o.tail) == "" {
		return "(no output)"
	}
	return o.tail
}

// runCheckCommand runs command with /bin/sh -c in dir, with exactly env, and
// classifies how it ended.
func runCheckCommand(ctx context.Context, dir, command string, timeout time.Duration, env []string, confine *worker.Confinement, stdout io.Writer) commandOutcome {
	start := time.Now()
	res, err := worker.Run(ctx, worker.Spec{
		Command:   command,
		Dir:       dir,
		Env:       env,
		ExactEnv:  true,
		Timeout:   timeout,
		KillGrace: killGrace,
		TailBytes: TailSize,
		Confine:   confine,
		Stdout:    stdout,
	})
	if err != nil { // no log file, so this can only be a *worker.StartError
		return commandOutcome{verdict: models.VerdictError, how: "could not be started: " + startFailure(err), duration: time.Since(start)}
	}
	o := commandOutcome{tail: formatTail(res.Tail, res.OutputBytes), duration: res.Duration, exit: res.ExitCode}
	took := FormatDuration(o.duration.Round(100 * time.Millisecond))

	// The group is killed once the shell exits, so a background child still holding
	// the output does not hold up the verdict: the shell's own status decides it.
	switch {
	case ctx.Err() != nil:
		o.verdict, o.how = models.VerdictError, "was interrupted: "+ctx.Err().Error()
	case res.TimedOut:
		o.verdict, o.how = models.VerdictFail, "timed out after "+FormatDuration(timeout)+" and was killed"
	case res.SignalNum != 0:
		// Go's name for the signal ("terminated"), as diagnoses have always said.
		o.verdict, o.how = models.VerdictFail, fmt.Sprintf("was killed by signal %s after %s", res.SignalNum, took)
	case res.ExitCode != 0:
		o.verdict, o.how = models.VerdictFail, fmt.Sprintf("exited with status %d after %s", res.ExitCode, took)
	default:
		o.verdict, o.how = models.VerdictPass, "exited with status 0 after "+took
	}
	return o
}

// startFailure is the cause of a failed worker.Run without the package's own
// "worker: start:" prefix, which means nothing to the reader of a diagnosis.
func startFailure(err error) string {
	var se *worker.StartError
	if errors.As(err, &se) {
		return se.Err.Error()
	}
	return err.Error()
}

// formatTail renders the last bytes of a command's output for a diagnosis: starting
// on a rune boundary (the cut may fall inside one), and saying how much came before,
// so a reader knows the start of the story is missing.
func formatTail(tail []byte, total int64) string {
	b := tail
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	if dropped := total - int64(len(b)); dropped > 0 {
		return "[… " + strconv.FormatInt(dropped, 10) + " earlier bytes omitted]\n" + string(b)
	}
	return string(b)
}

// failureEvidence is what the diagnosis of a failing command quotes (evidence) and
// its criterion's error (short): the failed tests when its results list them, else
// its last output; while withholding, never its output, and of held-out tests
// (held) only their number.
func failureEvidence(out commandOutcome, run *TestRun, withhold bool, held *Withholding) (evidence, short string) {
	switch {
	case run != nil && run.Report.Fail > 0 && held != nil:
		evidence = withheldFailures(run.Report, held)
		return evidence, evidence
	case run != nil && run.Report.Fail > 0:
		evidence = failingTests(run.Report, withhold)
		if withhold {
			return evidence, evidence
		}
		return evidence + "\nlast output:\n" + out.tailOrNone(), evidence
	case withhold:
		evidence = "its output is withheld: the run holds held-out tests"
		return evidence, evidence
	}
	return "last output:\n" + out.tailOrNone(), out.tailOrNone()
}

// withheldDetail is everything withholding keeps from the worker about a failing
// command, for people: its failed tests with their whole messages and its last output.
func withheldDetail(j verifyJob, out commandOutcome, run *TestRun) string {
	d := describeJob(j) + " " + out.how + ";\n"
	if run != nil && run.Report.Fail > 0 {
		d += failingTests(run.Report, false) + "\n"
	}
	return d + "last output:\n" + out.tailOrNone()
}
