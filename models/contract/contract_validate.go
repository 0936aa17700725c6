package contract

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Contract defaults and limits. Normalize applies the defaults; Validate enforces the
// limits.
const (
	// DefaultMaxAttempts is a worker attempt plus one revisionist attempt
	// (completion-verification.md); a larger budget is Ralph mode.
	DefaultMaxAttempts = 2
	// MaxMaxAttempts bounds Ralph mode so one task cannot burn an agent for a day.
	MaxMaxAttempts = 20
	// DefaultTimeout is the time limit of one worker attempt.
	DefaultTimeout = 30 * time.Minute
	// DefaultVerifyTimeout is the time limit of one verify command or criterion.
	DefaultVerifyTimeout = 5 * time.Minute
	// MaxContractDuration bounds timeout, verify_timeout and cooldown.
	MaxContractDuration = 24 * time.Hour
	// MaxReviewRounds is the artifact-review budget of the design (at most 3 rounds).
	MaxReviewRounds = 3
	// DefaultFileOutputPath and DefaultSignalOutputPath are the output paths of file
	// and signal contracts that name none; {task_id} is expanded by OutputPath.
	DefaultFileOutputPath   = "{task_id}/output.md"
	DefaultSignalOutputPath = "{task_id}/signal.json"
	// TaskIDPlaceholder is expanded to the task's id in output paths.
	TaskIDPlaceholder = "{task_id}"
)

// Criterion timings.
const (
	TimingImmediate = "immediate"
	TimingDeferred  = "deferred"
)

// Review triggers.
const (
	ReviewAlways = "always"
	ReviewPhase  = "phase"
	ReviewEvery  = "every"
	ReviewFinal  = "final"
)

// Generation sources of a verification contract.
const (
	GeneratedAuto     = "auto"
	GeneratedUser     = "user"
	GeneratedTemplate = "template"
)

const (
	maxVerifyCommands = 20
	maxCommandLen     = 4096
	maxEvaluateLen    = 20000
	maxCriteria       = 50
	maxTokenLen       = 200
)

// MaxPathLen bounds a path in a contract (and a workspace directory).
const MaxPathLen = 1024

// Normalize puts the contract in its canonical form: trims and lower-cases names,
// infers an empty completion type (file when a path is given, none otherwise, the
// same rule the runner's mechanical check applies), gives file and signal contracts a
// default output path, and fills the budget defaults (max_attempts 2, timeout 30m,
// verify_timeout 5m; review max_rounds 3 and when [always]). An empty verification
// type becomes auto, to be resolved by ResolveContract before delegation. Normalize
// never removes a value Validate should complain about: an empty verify command stays
// so that Validate names it.
func (c *Contract) Normalize() {
	c.Verification.HeldOutCount = 0 // a redacted contract's count is never stored
	c.Completion.normalize()
	c.Verification.normalize()
	if c.Review != nil {
		r := *c.Review
		r.normalize()
		c.Review = &r
	}
}

// Normalized returns a normalised deep copy of c, c itself untouched: what every
// renderer (the worker's brief, the template preview) shows, so that none works out
// the defaults again. Unlike Normalize it keeps HeldOutCount, which a redacted
// contract tells its reader although it is never stored.
func (c Contract) Normalized() Contract {
	out := c.Clone()
	out.Normalize()
	out.Verification.HeldOutCount = c.Verification.HeldOutCount
	return out
}

// Normalized returns a normalised copy of the completion contract cp, cp itself
// untouched: Contract.Normalized's completion, for a renderer that holds a completion
// alone (the blocked-task payload's), so that it too shows the defaults the checks
// apply (the inferred type, the default path, max_attempts and timeouts) without
// working them out again.
func (cp Completion) Normalized() Completion {
	return Contract{Completion: cp}.Normalized().Completion
}

// Clone returns a deep copy of c: the copy shares no slice, map or pointer with c.
func (c Contract) Clone() Contract {
	out := c
	cp := &out.Completion
	cp.Verify = slices.Clone(cp.Verify)
	cp.Checklist = clonePtr(cp.Checklist)
	v := &out.Verification
	v.Criteria = slices.Clone(v.Criteria)
	for i := range v.Criteria {
		v.Criteria[i].Tools = slices.Clone(v.Criteria[i].Tools)
	}
	v.GeneratedAt = clonePtr(v.GeneratedAt)
	v.Stacks, v.Protect, v.HeldOut = slices.Clone(v.Stacks), slices.Clone(v.Protect), slices.Clone(v.HeldOut)
	if c.Review != nil {
		r := *c.Review
		r.When = slices.Clone(r.When)
		out.Review = &r
	}
	if c.Budget != nil {
		b := Budget{MaxCostUSD: clonePtr(c.Budget.MaxCostUSD), MaxTokens: clonePtr(c.Budget.MaxTokens)}
		out.Budget = &b
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// normalize is Normalize's part for the completion contract: the type inferred, the
// default output path, the budget defaults.
func (cp *Completion) normalize() {
	cp.Type = CompletionType(strings.ToLower(strings.TrimSpace(string(cp.Type))))
	cp.Path = strings.TrimSpace(cp.Path)
	cp.Signal = strings.TrimSpace(cp.Signal)
	cp.DoneToken = strings.TrimSpace(cp.DoneToken)
	cp.Evaluate = strings.TrimSpace(cp.Evaluate)
	if cp.Type == "" {
		cp.Type = CompletionNone
		if cp.Path != "" {
			cp.Type = CompletionFile
		}
	}
	if cp.Path == "" {
		switch cp.Type {
		case CompletionFile:
			cp.Path = DefaultFileOutputPath
		case CompletionSignal:
			cp.Path = DefaultSignalOutputPath
		}
	}
	if len(cp.Verify) > 0 {
		v := make([]string, len(cp.Verify))
		for i, cmd := range cp.Verify {
			v[i] = strings.TrimSpace(cmd)
		}
		cp.Verify = v
	}
	if cp.MaxAttempts == 0 && !cp.zeroMaxAttempts {
		cp.MaxAttempts = DefaultMaxAttempts
	}
	if cp.Timeout.Duration == 0 {
		cp.Timeout.Duration = DefaultTimeout
	}
	if cp.VerifyTimeout.Duration == 0 {
		cp.VerifyTimeout.Duration = DefaultVerifyTimeout
	}
	if cp.Checklist != nil {
		cl := *cp.Checklist
		cl.Path = strings.TrimSpace(cl.Path)
		cp.Checklist = &cl
	}
}

// normalize is Normalize's part for the verification contract: canonical case, an
// empty type auto.
func (v *Verification) normalize() {
	for i, p := range v.Protect {
		v.Protect[i] = strings.TrimSpace(p)
	}
	v.Type = VerificationType(strings.ToLower(strings.TrimSpace(string(v.Type))))
	if v.Type == "" {
		v.Type = VerifyAuto
	}
	v.GeneratedFrom = strings.ToLower(strings.TrimSpace(v.GeneratedFrom))
	v.Workspace = strings.ToLower(strings.TrimSpace(v.Workspace))
	if len(v.Criteria) > 0 {
		crit := make([]Criterion, len(v.Criteria))
		for i, cr := range v.Criteria {
			cr.Activity = strings.ToLower(strings.TrimSpace(cr.Activity))
			cr.Description = strings.TrimSpace(cr.Description)
			cr.Pattern = strings.TrimSpace(cr.Pattern)
			cr.Timing = strings.ToLower(strings.TrimSpace(cr.Timing))
			cr.Command = strings.TrimSpace(cr.Command)
			cr.Stack = strings.ToLower(strings.TrimSpace(cr.Stack))
			if len(cr.Tools) > 0 {
				tools := make([]string, len(cr.Tools))
				for j, t := range cr.Tools {
					tools[j] = strings.TrimSpace(t)
				}
				cr.Tools = tools
			}
			crit[i] = cr
		}
		v.Criteria = crit
	}
}

// normalize is Normalize's part for a review: canonical case, max_rounds 3 and when
// [always] by default.
func (r *Review) normalize() {
	r.Role = strings.ToLower(strings.TrimSpace(r.Role))
	r.OnExhausted = strings.ToLower(strings.TrimSpace(r.OnExhausted))
	if r.MaxRounds == 0 {
		r.MaxRounds = MaxReviewRounds
	}
	if len(r.When) == 0 {
		r.When = []string{ReviewAlways}
	} else {
		w := make([]string, len(r.When))
		for i, s := range r.When {
			w[i] = strings.ToLower(strings.TrimSpace(s))
		}
		r.When = w
	}
}

// Validate checks the contract and returns an EINVALID error whose fields are keyed
// by path (completion.path, completion.verify[1], verification.criteria[0].activity,
// review.role). It does not modify the contract; call Normalize first so that
// defaults and canonical case are in place (a zero max_attempts or timeout means
// "the default" and is accepted, except a max_attempts read as an explicit 0: below
// 1 is refused).
func (c *Contract) Validate() error {
	var fe FieldErrors
	c.Completion.validate(&fe)
	c.Verification.validate(&fe)
	if c.Review != nil {
		c.Review.validate(&fe)
	}
	if msg := c.Budget.Problem(); msg != "" {
		fe.Add("budget", msg)
	}
	return fe.Err()
}

func (cp *Completion) validate(fe *FieldErrors) {
	switch cp.Type {
	case "", CompletionFile, CompletionSignal, CompletionNone:
	default:
		fe.Add("completion.type", "unknown completion type "+quote(string(cp.Type))+"; use file, signal or none")
	}
	typ := cp.Type
	if typ == "" {
		typ = CompletionNone
		if strings.TrimSpace(cp.Path) != "" {
			typ = CompletionFile
		}
	}
	if cp.Path != "" {
		if msg := workspacePathProblem(cp.Path); msg != "" {
			fe.Add("completion.path", msg)
		} else if typ == CompletionNone {
			fe.Add("completion.path", "only applies to types file and signal")
		}
	}
	if cp.MinLength < 0 {
		fe.Add("completion.min_length", "must not be negative")
	} else if cp.MinLength > 0 && typ != CompletionFile {
		fe.Add("completion.min_length", "only applies to type file")
	}
	switch {
	case typ == CompletionSignal && strings.TrimSpace(cp.Signal) == "":
		fe.Add("completion.signal", "is required for type signal: the value of the \"signal\" field the worker writes")
	case typ != CompletionSignal && cp.Signal != "":
		fe.Add("completion.signal", "only applies to type signal; use done_token for a word the worker prints")
	case len(cp.Signal) > maxTokenLen:
		fe.Add("completion.signal", fmt.Sprintf("must be at most %d characters", maxTokenLen))
	}
	if len(cp.DoneToken) > maxTokenLen {
		fe.Add("completion.done_token", fmt.Sprintf("must be at most %d characters", maxTokenLen))
	} else if cp.DoneToken != "" && strings.TrimSpace(cp.DoneToken) == "" {
		fe.Add("completion.done_token", "must not be only whitespace")
	}
	if len(cp.Verify) > maxVerifyCommands {
		fe.Add("completion.verify", fmt.Sprintf("at most %d commands", maxVerifyCommands))
	}
	for i, cmd := range cp.Verify {
		key := "completion.verify[" + strconv.Itoa(i) + "]"
		switch {
		case strings.TrimSpace(cmd) == "":
			fe.Add(key, "must not be empty")
		case len(cmd) > maxCommandLen:
			fe.Add(key, fmt.Sprintf("must be at most %d characters", maxCommandLen))
		case strings.ContainsRune(cmd, 0):
			fe.Add(key, "must not contain NUL")
		}
	}
	if len(cp.Evaluate) > maxEvaluateLen {
		fe.Add("completion.evaluate", fmt.Sprintf("must be at most %d characters", maxEvaluateLen))
	}
	if cp.MaxAttempts < 0 || cp.MaxAttempts == 0 && cp.zeroMaxAttempts {
		fe.Add("completion.max_attempts", fmt.Sprintf("must be at least 1 (leave it out for the default, %d)", DefaultMaxAttempts))
	} else if cp.MaxAttempts > MaxMaxAttempts {
		fe.Add("completion.max_attempts", fmt.Sprintf("must be at most %d", MaxMaxAttempts))
	}
	checkDuration(fe, "completion.timeout", cp.Timeout)
	checkDuration(fe, "completion.verify_timeout", cp.VerifyTimeout)
	checkDuration(fe, "completion.cooldown", cp.Cooldown)
	if cl := cp.Checklist; cl != nil {
		if strings.TrimSpace(cl.Path) == "" {
			fe.Add("completion.checklist.path", "is required")
		} else if msg := workspacePathProblem(cl.Path); msg != "" {
			fe.Add("completion.checklist.path", msg)
		}
		if cl.Count < 1 {
			fe.Add("completion.checklist.count", "must be at least 1")
		}
	}
}

func checkDuration(fe *FieldErrors, key string, d Duration) {
	if d.Duration < 0 {
		fe.Add(key, "must not be negative")
	} else if d.Duration > MaxContractDuration {
		fe.Add(key, "must be at most 24h")
	}
}

// workspacePathProblem says what is wrong with a path that must name a file inside
// the task workspace, or "" when nothing is. The path is checked as written and
// after cleaning, so "a/../../b" is refused while "a/../b" is fine.
func workspacePathProblem(p string) string {
	switch {
	case len(p) > MaxPathLen:
		return fmt.Sprintf("must be at most %d characters", MaxPathLen)
	case strings.ContainsRune(p, 0):
		return "must not contain NUL"
	case !utf8.ValidString(p):
		return "must be valid UTF-8"
	case strings.Contains(p, `\`):
		return "must use forward slashes"
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || (len(p) >= 2 && p[1] == ':'):
		return "must be relative to the task workspace"
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "must stay inside the task workspace (no .. segments leading out)"
	}
	if clean == "." {
		return "must name a file inside the task workspace"
	}
	return ""
}

func (v *Verification) validate(fe *FieldErrors) {
	switch v.Type {
	case "", VerifyVerifiable, VerifyAdvisory, VerifySkip, VerifyAuto:
	default:
		fe.Add("verification.type", "unknown verification type "+quote(string(v.Type))+"; use verifiable, advisory, skip or auto")
	}
	switch v.GeneratedFrom {
	case "", GeneratedAuto, GeneratedUser, GeneratedTemplate:
	default:
		fe.Add("verification.generated_from", "must be auto, user or template")
	}
	switch v.Workspace {
	case "", WorkspacePending, WorkspacePendingCommands, WorkspaceDetected:
	default:
		fe.Add("verification.workspace", "must be pending, pending-commands or detected")
	}
	if len(v.Stacks) > maxStacks {
		fe.Add("verification.stacks", fmt.Sprintf("at most %d stacks", maxStacks))
	}
	for i, st := range v.Stacks {
		if !activityNameRE.MatchString(st) {
			fe.Add("verification.stacks["+strconv.Itoa(i)+"]", "stack names are 1-64 lower-case letters, digits, '.', '_' or '-'")
		}
	}
	if len(v.Criteria) > maxCriteria {
		fe.Add("verification.criteria", fmt.Sprintf("at most %d criteria", maxCriteria))
	}
	for i, cr := range v.Criteria {
		key := "verification.criteria[" + strconv.Itoa(i) + "]."
		if strings.TrimSpace(cr.Activity) == "" {
			fe.Add(key+"activity", "is required")
		} else if len(cr.Activity) > 64 {
			fe.Add(key+"activity", "must be at most 64 characters")
		}
		if strings.TrimSpace(cr.Description) == "" {
			fe.Add(key+"description", "is required")
		} else if len(cr.Description) > 1000 {
			fe.Add(key+"description", "must be at most 1000 characters")
		}
		switch cr.Timing {
		case "", TimingImmediate, TimingDeferred:
		default:
			fe.Add(key+"timing", "must be immediate or deferred")
		}
		if cr.Command != "" && strings.TrimSpace(cr.Command) == "" {
			fe.Add(key+"command", "must not be only whitespace")
		} else if len(cr.Command) > maxCommandLen {
			fe.Add(key+"command", fmt.Sprintf("must be at most %d characters", maxCommandLen))
		}
		if cr.Stack != "" && !activityNameRE.MatchString(cr.Stack) {
			fe.Add(key+"stack", "stack names are 1-64 lower-case letters, digits, '.', '_' or '-'")
		}
		validateTools(key+"tools", cr.Tools, fe)
	}
	v.validateJudge(fe)
}

func (r *Review) validate(fe *FieldErrors) {
	if strings.TrimSpace(r.Role) == "" {
		fe.Add("review.role", "is required: the role of the reviewer agent")
	} else if !ValidRole(r.Role) {
		fe.Add("review.role", "must be 1-32 lower-case letters, digits, '_' or '-'")
	}
	if r.MaxRounds < 0 {
		fe.Add("review.max_rounds", "must not be negative")
	} else if r.MaxRounds > MaxReviewRounds {
		fe.Add("review.max_rounds", fmt.Sprintf("must be at most %d", MaxReviewRounds))
	}
	if r.Every < 0 {
		fe.Add("review.every", "must not be negative")
	}
	validOnExhausted(r.OnExhausted, fe)
	for i, w := range r.When {
		switch w {
		case ReviewAlways, ReviewPhase, ReviewFinal:
		case ReviewEvery:
			if r.Every < 1 {
				fe.Add("review.every", "must be at least 1 when review.when has every")
			}
		default:
			fe.Add("review.when["+strconv.Itoa(i)+"]", "must be always, phase, every or final")
		}
	}
}

// OutputPath is the completion path with {task_id} expanded, relative to the task
// workspace: the file a file or signal contract checks (the default path when none
// is set), and "" for type none. It does not validate the path; Validate does.
func (c Contract) OutputPath(taskID int64) string {
	// The type and the default path are the normalised contract's, not worked out
	// again here.
	cp := c.Completion
	cp.normalize()
	if cp.Type != CompletionFile && cp.Type != CompletionSignal {
		return ""
	}
	return expandTaskID(cp.Path, taskID)
}

// Expanded returns the completion contract with {task_id} expanded in its output
// path and its checklist path, as diagnoses, briefs and the blocked-task payload show
// them; an empty output path of a file or signal contract becomes the default one,
// expanded. The receiver is not modified.
func (cp Completion) Expanded(taskID int64) Completion {
	out := cp
	out.Verify = slices.Clone(cp.Verify)
	out.Path = Contract{Completion: cp}.OutputPath(taskID)
	if out.Path == "" {
		out.Path = expandTaskID(cp.Path, taskID)
	}
	if cp.Checklist != nil {
		cl := *cp.Checklist
		cl.Path = expandTaskID(cl.Path, taskID)
		out.Checklist = &cl
	}
	return out
}

// Hash is the hex SHA-384 of the contract's canonical JSON with GeneratedAt left out,
// so regenerating an identical contract at another time keeps the hash. Canonical
// means encoding/json's output, whose field order is fixed by the struct; hash the
// normalized form that is stored, so that equivalent spellings hash alike.
func (c Contract) Hash() string {
	c.Verification.GeneratedAt = nil
	b, err := json.Marshal(c)
	if err != nil {
		// Contract holds only strings, numbers and durations: Marshal cannot fail.
		panic("models: marshal contract: " + err.Error())
	}
	sum := sha512.Sum384(b)
	return hex.EncodeToString(sum[:])
}
