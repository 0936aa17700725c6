package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/countersign/countersign/models/contract"
	"github.com/countersign/countersign/models/formats/shellword"
)

// StageReadiness is the stage of a task blocked before its first attempt because its
// contract cannot be checked as things stand: a verify tool that is not installed, a
// workspace that is not a git repository although the contract asks for a clean one,
// an output directory that cannot be written, no evaluator for `evaluate`. No worker
// ran and no attempt was used; the blocked item lists what is missing, and a retry
// without guidance ("check again") checks again.
const StageReadiness = "readiness"

// BlockNotReady blocks t, in progress under the runner's lease, before any attempt of
// this round was made, inside the runner's transaction: missing lists what keeps its
// contract from being checked. The task waits in the inbox (a blocked item whose one
// entry has stage readiness and attempt 0, and the missing things) until a lead or
// exec checks again (a retry, which needs no guidance for a task blocked this way),
// reassigns, accepts or cancels it. Nothing goes to the ledger: no work was done and
// no worker was paid; the budget (attempts used) is left as it is.
func (s *AttemptService) BlockNotReady(ctx context.Context, tx Tx, runner *Agent, t *Task, missing []string) error {
	return s.blockBeforeAttempt(ctx, tx, runner, t, StageReadiness, "not ready: "+strings.Join(missing, "; "),
		fmt.Sprintf("Task %d is not ready, no worker was started: %s", t.ID, strings.Join(missing, "; ")), missing)
}

// blockBeforeAttempt blocks t before a worker started (readiness, budget): the blocked
// inbox item's one entry is attempt 0 at stage, and a retry needs no guidance.
func (s *AttemptService) blockBeforeAttempt(ctx context.Context, tx Tx, runner *Agent, t *Task, stage, failure, title string, missing []string) error {
	agentName, err := assigneeName(ctx, tx, t)
	if err != nil {
		return err
	}
	if err := s.tasks.Apply(ctx, tx, runner, t, ActBlock, ActionInput{}); err != nil {
		return err
	}
	p := BlockedPayload{Type: LedgerTaskBlocked, TaskID: t.ID, WorkflowInstanceID: t.RunID, StepNum: t.StepNum,
		Agent: agentName, CompletionSpec: t.Contract.Completion.Expanded(t.ID), TS: s.now(), Missing: missing,
		Attempts: []BlockedAttempt{{Attempt: 0, Stage: stage, Failure: failure}}}
	payload, err := json.Marshal(p)
	if err != nil {
		return err
	}
	item := &InboxItem{Kind: InboxBlocked, TaskID: t.ID, GoalID: t.GoalID, Payload: payload, CreatedAt: s.now(),
		Title: contract.Truncate(title, 300)}
	if err := tx.CreateInboxItem(ctx, item); err != nil {
		return err
	}
	return s.emit(ctx, tx, "inbox.created", runner, &t.ID, t.GoalID, map[string]any{
		"inbox_id": item.ID, "kind": item.Kind, "stage": stage, "missing": missing})
}

// BlockedNotReady reports whether task id waits in the inbox because it was not ready
// (its open blocked item has stage readiness): then a retry needs no guidance, since
// nothing the worker did is to be fixed.
func BlockedNotReady(ctx context.Context, tx Tx, id int64) (bool, error) {
	return blockedAt(ctx, tx, id, StageReadiness, StageBudget)
}

// blockedAt reports whether task id's open blocked item ends at one of stages.
func blockedAt(ctx context.Context, tx Tx, id int64, stages ...string) (bool, error) {
	items, err := tx.ListInbox(ctx, InboxFilter{TaskID: id, Kind: InboxBlocked})
	if err != nil {
		return false, err
	}
	return BlockedItemAt(items, stages...), nil
}

// BlockedItemAt reports whether one of items is an open blocked item whose last
// attempt ended at one of stages: BlockedItemAt(items, StageBudget) says a budget
// stopped the task.
func BlockedItemAt(items []InboxItem, stages ...string) bool {
	for _, it := range items {
		if it.Resolved || it.Kind != InboxBlocked {
			continue
		}
		var p BlockedPayload
		if json.Unmarshal(it.Payload, &p) != nil {
			continue
		}
		if n := len(p.Attempts); n > 0 && slices.Contains(stages, p.Attempts[n-1].Stage) {
			return true
		}
	}
	return false
}

// RulesIn is Rules read inside tx: the runner reads them in its claim, whose
// transaction may hold the only connection (SQLite).
func RulesIn(ctx context.Context, tx Tx) (ProjectRules, error) {
	r, err := tx.GetRules(ctx)
	if ErrorCode(err) == ENOTFOUND {
		return DefaultRules(), nil
	}
	if err != nil {
		return ProjectRules{}, err
	}
	return *r, nil
}

// shellBuiltins are the words a shell runs itself (POSIX, dash and bash builtins):
// nothing on PATH has to provide them.
var shellBuiltins = map[string]bool{
	".": true, ":": true, "[": true, "alias": true, "bg": true, "break": true, "builtin": true, "caller": true,
	"cd": true, "command": true, "compgen": true, "complete": true, "continue": true, "declare": true, "dirs": true,
	"disown": true, "echo": true, "enable": true, "eval": true, "exit": true, "export": true, "false": true, "fc": true,
	"fg": true, "getopts": true, "hash": true, "help": true, "history": true, "jobs": true, "kill": true, "let": true,
	"local": true, "logout": true, "mapfile": true, "popd": true, "printf": true, "pushd": true, "pwd": true,
	"read": true, "readarray": true, "readonly": true, "return": true, "set": true, "shift": true, "shopt": true,
	"source": true, "suspend": true, "test": true, "times": true, "trap": true, "true": true, "type": true,
	"typeset": true, "ulimit": true, "umask": true, "unalias": true, "unset": true, "wait": true,
}

// Shell words that run what follows them ("then go test"); the next word is the program.
var shellPrefixes = map[string]bool{
	"!": true, "{": true, "then": true, "else": true, "elif": true, "do": true, "if": true, "while": true,
	"until": true, "time": true, "exec": true, "nohup": true, "env": true,
}

// Shell words after which nothing in the simple command is a program to look for.
var shellStops = map[string]bool{
	"for": true, "case": true, "select": true, "in": true, "esac": true, "done": true,
	"fi": true, "}": true, "[[": true, "]]": true,
}

// CommandPrograms lists the programs a shell command line (a verify command, an
// activity's command) runs that must be found where a shell would look for them: the
// first word of each simple command as package shellword reads the line,
// after variable assignments and words such as `then`, `!`, `exec` or `env`. Shell
// builtins and keywords are left out, as are words a shell would expand ($, `, globs,
// ~) and programs named by a relative path (the workspace's own, which the worker may
// create). A program named by an absolute path is listed as named. It reads plain
// command lines and never raises a false alarm on the rest: what it cannot read, it
// leaves out.
func CommandPrograms(command string) []string {
	var out []string
	cmds, funcs, _ := shellword.Simple(command)
	seen := map[string]bool{}
	for _, words := range cmds {
		prog := programOf(words)
		if prog == "" || seen[prog] || funcs[prog] {
			continue
		}
		seen[prog] = true
		out = append(out, prog)
	}
	return out
}

// programOf picks the program of a simple command's words, "" when none applies.
func programOf(words []shellword.Word) string {
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w.Redirect:
			continue
		case w.Assigns:
			continue
		case w.Expands:
			return ""
		case shellStops[w.Text]:
			return ""
		case w.Text == "function":
			i++ // function name { …: the body's first word follows
			continue
		case w.Text == "env":
			// env [-i] [-u NAME] [NAME=value…] program
			for i+1 < len(words) && strings.HasPrefix(words[i+1].Text, "-") {
				if words[i+1].Text == "-u" {
					i++
				}
				i++
			}
			continue
		case shellPrefixes[w.Text]:
			continue
		case shellBuiltins[w.Text]:
			return ""
		case strings.HasPrefix(w.Text, "/"):
			return w.Text
		case strings.ContainsRune(w.Text, '/') || w.Text == "":
			return ""
		}
		return w.Text
	}
	return ""
}
