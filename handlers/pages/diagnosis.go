package pages

import (
	"regexp"
	"strings"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/web/pages/inbox"
	"github.com/countersign/countersign/web/pages/task"
)

// workspacePrefix matches the server's part of a path inside a task workspace, as
// diagnoses written before the runner named files relative to the workspace have it:
// ".../data/work/tasks/7/" or ".../worktrees/7/". What follows is the workspace path.
var workspacePrefix = regexp.MustCompile(`(?:/[^\s/"'()]+)+/(?:tasks|worktrees)/[0-9]+/`)

// absolutePath matches an absolute path of two or more parts where a path starts: at
// the start of the text or after a space, a quote, a parenthesis or "=" (so that the
// path of a URL, after "https:", is not one).
var absolutePath = regexp.MustCompile(`(^|[\s"'(=])((?:/[^\s/"'():;,]+)+)/([^\s/"'():;,]+)`)

// abbreviatePaths shortens every absolute path left in s to its last part ("…/run.sh"):
// the server's directories are not the reader's business, the file's name is.
func abbreviatePaths(s string) string {
	return absolutePath.ReplaceAllString(s, "$1…/$3")
}

// tidyDiagnosis is a diagnosis as the pages show it beside its stage: without the
// stage's code prefix (models.WithoutStage) and without server paths: a file in a task
// workspace or an agent's workdir is named relative to it, any other by its last
// part (abbreviatePaths). The runner writes them so;
// this keeps older diagnoses, and anything quoted from a tool's output, the same.
func (d *directory) tidyDiagnosis(stage, s string) string {
	s = workspacePrefix.ReplaceAllString(models.WithoutStage(stage, s), "")
	if d != nil {
		for _, a := range d.list {
			if w := strings.TrimRight(a.Workdir, "/"); len(w) > 1 {
				s = strings.ReplaceAll(s, w+"/", "")
			}
		}
	}
	return abbreviatePaths(s)
}

// blockedTitle is a blocked inbox item's title without the last failure it quotes
// ("Task 7 blocked after 2 attempts (mechanical: …)"): where the attempts are listed
// beside it, the failure is shown there, once.
func blockedTitle(title string) string {
	if strings.HasPrefix(title, "Task ") && strings.Contains(title, " blocked after ") {
		if i := strings.Index(title, " ("); i > 0 {
			return title[:i]
		}
	}
	return title
}

// dedupeInboxAttempts tidies a blocked item's attempts and marks each whose failure
// repeats an earlier one's (same stage, same words), so the card says the sentence once.
func dedupeInboxAttempts(atts []inbox.Attempt, dir *directory) {
	seen := map[string]int{}
	for i := range atts {
		a := &atts[i]
		a.Failure = dir.tidyDiagnosis(a.Stage, a.Failure)
		key := a.Stage + "\x00" + a.Failure
		if n, ok := seen[key]; ok && a.Failure != "" {
			a.SameAs = n
			continue
		}
		seen[key] = a.Number
	}
}

// dedupeTaskAttempts does the same for the task page: an attempt whose failure
// repeats an earlier attempt's refers to it, and a check whose diagnosis is its
// attempt's headline says so instead of repeating it.
func dedupeTaskAttempts(atts []task.Attempt, dir *directory) {
	seen := map[string]int{}
	for i := range atts {
		a := &atts[i]
		a.Diagnosis = dir.tidyDiagnosis(a.Stage, a.Diagnosis)
		for j := range a.Checks {
			ch := &a.Checks[j]
			ch.Diagnosis = dir.tidyDiagnosis(ch.Stage, ch.Diagnosis)
			if a.Stage != "" && ch.Stage == a.Stage && ch.Diagnosis == a.Diagnosis {
				ch.Diagnosis, ch.AsAbove = "", true
			}
		}
		if a.Stage == "" || a.Diagnosis == "" {
			continue
		}
		key := a.Stage + "\x00" + a.Diagnosis
		if n, ok := seen[key]; ok {
			a.SameAs = n
			continue
		}
		seen[key] = a.Number
	}
}
