package checks

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/countersign/countersign/models"
)

// DefaultVerifyTimeout bounds each verify command when the contract sets none.
const DefaultVerifyTimeout = 10 * time.Minute

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
}

// Verify runs the contract's verify commands, then each criterion's command
// (Criterion.Command, else activityCommands[Activity]), in order, each as
// `/bin/sh -c <command>` in dir, in its own process group (killed on timeout), with
// at most timeout per command (DefaultVerifyTimeout when zero) and only the last
// TailSize bytes of output kept.
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
func Verify(ctx context.Context, dir string, commands []string, criteria []models.Criterion,
	activityCommands map[string]string, timeout time.Duration, env []string) (models.CheckResult, []models.CriterionResult) {
	start := time.Now()
	if timeout <= 0 {
		timeout = DefaultVerifyTimeout
	}
	if env == nil {
		env = minimalEnv()
	}

	var jobs []verifyJob
	for _, c := range commands {
		j := verifyJob{activity: VerifyActivity, command: strings.TrimSpace(c)}
		if j.command == "" {
			j.skip = "empty verify command"
		}
		jobs = append(jobs, j)
	}
	for _, c := range criteria {
		j := verifyJob{activity: c.Activity, description: c.Description, pattern: c.Pattern, criterion: true}
		j.command = strings.TrimSpace(c.Command)
		if j.command == "" {
			j.command = strings.TrimSpace(activityCommands[c.Activity])
		}
		if j.command == "" {
			j.skip = fmt.Sprintf("no command: the criterion names none and the project rules map none to activity %q", c.Activity)
		}
		jobs = append(jobs, j)
	}

	results := make([]models.CriterionResult, 0, len(jobs))
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
			cmdEnv := env
			if j.criterion {
				cmdEnv = append(append([]string(nil), env...),
					EnvCriterionActivity+"="+j.activity, EnvCriterionPattern+"="+j.pattern)
			}
			out := runCheckCommand(ctx, dir, j.command, timeout, cmdEnv)
			r.Attempts = 1
			r.DurationMS = out.duration.Milliseconds()
			r.Status = out.verdict
			if out.verdict != models.VerdictPass {
				r.Error = out.how + ": " + out.tailOrNone()
				res := result(models.StageVerify, out.verdict, describeJob(j)+" "+out.how+"; last output:\n"+out.tailOrNone(), start)
				stop = &res
			}
		}
		results = append(results, r)
	}

	if stop != nil {
		if skippedAfter > 0 {
			stop.Diagnosis += fmt.Sprintf("\n(%d later verification command(s) not run)", skippedAfter)
		}
		stop.DurationMS = time.Since(start).Milliseconds()
		return *stop, results
	}
	if ran == 0 {
		diag := "no verify commands or criteria to run"
		if len(jobs) > 0 {
			diag = fmt.Sprintf("none of the %d verification item(s) has a command to run", len(jobs))
		}
		return result(models.StageVerify, models.VerdictSkipped, diag, start), results
	}
	return result(models.StageVerify, models.VerdictPass, "", start), results
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
}

func (o commandOutcome) tailOrNone() string {
	if strings.TrimSpace(o.tail) == "" {
		return "(no output)"
	}
	return o.tail
}

// runCheckCommand runs command with /bin/sh -c in dir and classifies how it ended.
func runCheckCommand(ctx context.Context, dir, command string, timeout time.Duration, env []string) commandOutcome {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tail := newTailBuffer(TailSize)
	cmd := exec.CommandContext(cctx, "/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Env = env

	start := time.Now()
	started, err := runInGroup(cmd, tail)
	if !started {
		return commandOutcome{verdict: models.VerdictError, how: "could not be started: " + err.Error(), duration: time.Since(start)}
	}
	o := commandOutcome{tail: tail.String(), duration: time.Since(start)}
	took := FormatDuration(o.duration.Round(100 * time.Millisecond))

	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		o.verdict, o.how = models.VerdictError, "was interrupted: "+ctx.Err().Error()
	case cctx.Err() != nil:
		o.verdict, o.how = models.VerdictFail, "timed out after "+FormatDuration(timeout)+" and was killed"
	case err == nil:
		o.verdict, o.how = models.VerdictPass, "exited with status 0 after "+took
	case errors.As(err, &exitErr):
		o.verdict = models.VerdictFail
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			o.how = fmt.Sprintf("was killed by signal %s after %s", ws.Signal(), took)
		} else {
			o.how = fmt.Sprintf("exited with status %d after %s", exitErr.ExitCode(), took)
		}
	case errors.Is(err, exec.ErrWaitDelay):
		// The shell exited 0 but a background child held the output open; the
		// command itself succeeded.
		o.verdict, o.how = models.VerdictPass, "exited with status 0 after "+took
	default:
		o.verdict, o.how = models.VerdictError, "could not be waited for: "+err.Error()
	}
	return o
}
