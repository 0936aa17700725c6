package contract

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/models/formats/glob"
)

// Contract generation (verifiable-task-completion-prd.md): before a task is delegated,
// its verification contract is classified as verifiable, advisory or skip from its
// words and its expected files, using editable Rules.

// DefaultRules returns the rules used until a project saves its own. They know
// stacks, not one language: the commands that check a task come from the stacks its
// workspace matches (DefaultStacks: Go, Node, Python, Rust, a Makefile test target),
// each with why it is there, and a workspace that matches none gets no command. Every
// command runs with /bin/sh in the task workspace.
//
// Beyond the stacks: one activity, docs (no merge-conflict markers left in Markdown
// files), called for by expected *.md files; no activity every task gets (Always).
//
// Advisory words: investigate, research, explore, discuss, plan, design, audit,
// analyze, review, evaluate, assess, compare, propose, brainstorm, spike, study,
// diagnose, recommend and the phrases "look into", "figure out", "find out", "root
// cause". Skip words: document, readme, docs, doc, comment, typo, spelling,
// changelog, wording. Words match whole words and their common forms (investigating,
// analysis, planning, documentation, comments) but not agent nouns (reviewer,
// planner, evaluator); in a phrase only the first word varies.
func DefaultRules() Rules {
	return Rules{
		Activities: map[string]string{
			"docs": `! grep -rIlE --include='*.md' '^(<<<<<<<|>>>>>>>)( |$)' .`,
		},
		FilePatterns: []FilePatternRule{
			{Pattern: "*.md", Activities: []string{"docs"}},
		},
		Always: []string{},
		Stacks: DefaultStacks(),
		AdvisoryWords: []string{
			"investigate", "research", "explore", "discuss", "plan", "design", "audit", "analyze",
			"review", "evaluate", "assess", "compare", "propose", "brainstorm", "spike", "study",
			"diagnose", "recommend", "look into", "figure out", "find out", "root cause",
		},
		SkipWords: []string{"document", "readme", "docs", "doc", "comment", "typo", "spelling", "changelog", "wording"},
	}
}

// activityDescriptions are the criterion descriptions of well-known activities.
var activityDescriptions = map[string]string{
	"unit-test":          "Unit tests pass",
	"typecheck":          "No type errors",
	"lint":               "No lint or formatting errors",
	"e2e":                "End-to-end tests pass",
	"frontend-test":      "Front-end unit tests pass",
	"frontend-typecheck": "No TypeScript type errors",
	"docs":               "Markdown has no merge-conflict markers",
	"vet":                "go vet reports no problems",
	"format":             "Code is formatted",
}

var (
	activityNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	ruleWordRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*( [a-z0-9][a-z0-9-]*){0,3}$`)
)

const maxRuleEntries = 200

// Validate checks the rules and returns an EINVALID error keyed by field:
// activities.<name>, file_patterns[2].pattern, file_patterns[2].activities[0],
// always[1], advisory_words[3], skip_words[0], stacks[1].commands[0].command, …
// An activity is known when activities defines it or a stack has a command for it.
func (r Rules) Validate() error {
	var fe FieldErrors
	r.Check(&fe)
	return fe.Err()
}

// Check records every problem of the rules in fe, keyed as Validate keys them, so
// that a caller holding more rules (models.Rules) reports them all at once.
func (r Rules) Check(fe *FieldErrors) {
	if len(r.Activities) == 0 && len(r.Stacks) == 0 {
		fe.Add("activities", "at least one activity (or one stack) is required")
	}
	names := make([]string, 0, len(r.Activities))
	for name := range r.Activities {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		key := "activities." + name
		if !activityNameRE.MatchString(name) {
			fe.Add(key, "activity names are 1-64 lower-case letters, digits, '.', '_' or '-'")
			continue
		}
		validateCommand(key, r.Activities[name], fe)
	}
	known := func(key, act string) {
		if _, ok := r.Activities[act]; !ok && !r.stackProvides(act) {
			fe.Add(key, "unknown activity "+quote(act)+"; define it under activities or in a stack")
		}
	}
	if len(r.FilePatterns) > maxRuleEntries {
		fe.Add("file_patterns", fmt.Sprintf("at most %d patterns", maxRuleEntries))
	}
	for i, fp := range r.FilePatterns {
		key := "file_patterns[" + strconv.Itoa(i) + "]"
		p := strings.TrimSpace(fp.Pattern)
		switch {
		case p == "":
			fe.Add(key+".pattern", "is required")
		case strings.Contains(p, `\`):
			fe.Add(key+".pattern", "must use forward slashes")
		default:
			if !glob.Valid(p) {
				fe.Add(key+".pattern", "is not a valid glob")
			}
		}
		if len(fp.Activities) == 0 {
			fe.Add(key+".activities", "at least one activity is required")
		}
		for j, a := range fp.Activities {
			known(key+".activities["+strconv.Itoa(j)+"]", a)
		}
		switch fp.Timing {
		case "", TimingImmediate, TimingDeferred:
		default:
			fe.Add(key+".timing", "must be immediate or deferred")
		}
	}
	for i, a := range r.Always {
		known("always["+strconv.Itoa(i)+"]", a)
	}
	checkWords := func(field string, words []string) {
		if len(words) > maxRuleEntries {
			fe.Add(field, fmt.Sprintf("at most %d words", maxRuleEntries))
		}
		for i, w := range words {
			if len(w) > 60 || !ruleWordRE.MatchString(w) {
				fe.Add(field+"["+strconv.Itoa(i)+"]", "must be a lower-case word or a phrase of up to four words (letters, digits, '-'), at most 60 characters")
			}
		}
	}
	checkWords("advisory_words", r.AdvisoryWords)
	checkWords("skip_words", r.SkipWords)
	for i, w := range r.SkipWords {
		if slices.Contains(r.AdvisoryWords, w) {
			fe.Add("skip_words["+strconv.Itoa(i)+"]", quote(w)+" is also an advisory word")
		}
	}
	validateStacks(r.Stacks, fe)
}

// Classify decides the verification type of a task from its words and its expected
// files (the files are also looked for in the text). The verb that leads the title
// (or, without a title, the description) weighs most:
//
//  1. an advisory word leads ("Investigate why checkout is slow") → advisory;
//  2. a skip word leads, or is in the three words after the lead verb ("Update the
//     installation docs", "Fix typo in …", "Add comments to …") → skip;
//  3. an advisory word is the object of the lead verb and no code file is expected
//     ("Write a plan for …") → advisory;
//  4. the lead is not an implementation verb (add, fix, implement, refactor, …) and an
//     advisory word appears anywhere ("Checkout is slow under load; investigate")
//     → advisory;
//  5. likewise with a skip word and no code file expected → skip;
//  6. only documentation files are expected (README.md, docs/…) → skip;
//  7. anything else → verifiable: "refactor" and friends still have to pass tests.
//
// Words match whole words and their common forms (investigating, analysis, planning,
// documentation), so "planet" or "explanation" do not count as "plan".
func Classify(title, description string, expectedFiles []string, rules Rules) VerificationType {
	tt := scanTaskText(title, description)
	files := dedupStrings(append(slices.Clip(expectedFiles), tt.files...))
	return classify(&tt, files, rules)
}

func classify(tt *taskText, files []string, rules Rules) VerificationType {
	adv := newWordMatcher(rules.AdvisoryWords)
	skip := newWordMatcher(rules.SkipWords)
	code, docs := 0, 0
	for _, f := range files {
		if isDocFile(f) {
			docs++
		} else {
			code++
		}
	}
	lead := ""
	if tt.lead >= 0 {
		lead = tt.words[tt.lead]
	}
	switch {
	case lead != "" && adv.matchAt(tt.words, tt.lead):
		return VerifyAdvisory
	case lead != "" && skip.matchAt(tt.words, tt.lead):
		return VerifySkip
	}
	for _, i := range tt.near(3) {
		if skip.matchAt(tt.words, i) {
			return VerifySkip
		}
	}
	if obj := tt.near(1); len(obj) == 1 && adv.matchAt(tt.words, obj[0]) && code == 0 {
		return VerifyAdvisory
	}
	if !implementationVerbs[lead] {
		for i := range tt.words {
			if adv.matchAt(tt.words, i) {
				return VerifyAdvisory
			}
		}
		if code == 0 {
			for i := range tt.words {
				if skip.matchAt(tt.words, i) {
					return VerifySkip
				}
			}
		}
	}
	if code == 0 && docs > 0 {
		return VerifySkip
	}
	return VerifyVerifiable
}

// Generate builds the verification contract of a task before delegation. The type is
// Classify's. Criteria: skip gets the minimal ones (the Always activities); advisory
// gets none (a person reviews the output); verifiable gets the Always activities plus
// those the expected files call for through FilePatterns, each activity once, in rule
// order — and unit-test when no file names an activity and rules.Activities defines
// it (rules without stacks), because a code change that names no files should still
// pass the tests. Every criterion carries the command rules.Activities maps it to
// (none for an activity only stacks define: the workspace gives it one). Expected
// files are the given ones plus those found in the title and description
// (ExtractFiles). Generate knows only the text; the workspace's stacks are added by
// AddStackCriteria (GenerateForWorkspace does both). Generation is pure and cheap (a
// few microseconds): no regexp is compiled and nothing is read from disk.
func Generate(title, description string, expectedFiles []string, rules Rules, now time.Time) Verification {
	tt := scanTaskText(title, description)
	files := dedupStrings(append(slices.Clip(expectedFiles), tt.files...))
	typ := classify(&tt, files, rules)
	at := now
	return Verification{
		Type:          typ,
		Criteria:      criteriaFor(typ, files, rules),
		GeneratedFrom: GeneratedAuto,
		GeneratedAt:   &at,
	}
}

// criteriaFor lists the criteria of a contract of type typ.
func criteriaFor(typ VerificationType, files []string, rules Rules) []Criterion {
	if typ == VerifyAdvisory {
		return nil
	}
	type pick struct {
		activity string
		timing   string
		files    []string
	}
	var picks []pick
	index := map[string]int{}
	add := func(act, timing, file string) {
		act = strings.TrimSpace(act)
		if act == "" {
			return
		}
		i, ok := index[act]
		if !ok {
			i = len(picks)
			index[act] = i
			picks = append(picks, pick{activity: act, timing: timing})
		}
		if picks[i].timing == "" {
			picks[i].timing = timing
		}
		if file != "" && !slices.Contains(picks[i].files, file) {
			picks[i].files = append(picks[i].files, file)
		}
	}
	for _, a := range rules.Always {
		add(a, "", "")
	}
	if typ == VerifyVerifiable {
		fromFiles := 0
		for _, f := range files {
			for _, fp := range rules.FilePatterns {
				if MatchFilePattern(fp.Pattern, f) {
					for _, a := range fp.Activities {
						add(a, fp.Timing, f)
						fromFiles++
					}
				}
			}
		}
		if _, ok := rules.Activities["unit-test"]; ok && fromFiles == 0 {
			add("unit-test", "", "")
		}
	}
	out := make([]Criterion, 0, len(picks))
	for _, p := range picks {
		c := Criterion{Activity: p.activity, Timing: p.timing, Command: rules.Activities[p.activity]}
		c.Description = activityDescriptions[p.activity]
		if c.Description == "" {
			c.Description = p.activity + " passes"
		}
		if len(p.files) > 0 {
			names := make([]string, 0, 3)
			for _, f := range p.files[:min(3, len(p.files))] {
				names = append(names, path.Base(strings.TrimSuffix(f, "/")))
			}
			more := ""
			if len(p.files) > 3 {
				more = fmt.Sprintf(" and %d more", len(p.files)-3)
			}
			c.Description += " (" + strings.Join(names, ", ") + more + ")"
			if len(p.files) == 1 && (strings.Contains(p.activity, "test") || p.activity == "e2e") {
				c.Pattern = testPattern(p.files[0])
			}
		}
		out = append(out, c)
	}
	return out
}

// SuggestedCriteria are the criteria a verifiable contract of the task would get
// from its words and files (the expected files plus those the text names): what the
// advisory prompt offers when a person makes an advisory task verifiable.
func SuggestedCriteria(title, brief string, files []string, rules Rules) []Criterion {
	tt := scanTaskText(title, brief)
	return criteriaFor(VerifyVerifiable, dedupStrings(append(slices.Clip(files), tt.files...)), rules)
}

// testPattern infers the name tests for a file are likely to carry: the base name
// without extensions and test suffixes (src/DarkModeToggle.test.tsx → DarkModeToggle).
func testPattern(f string) string {
	base := path.Base(strings.TrimSuffix(f, "/"))
	if dot := strings.IndexByte(base, '.'); dot > 0 {
		base = base[:dot]
	}
	return strings.TrimSuffix(base, "_test")
}

// ResolveContract fixes a task's verification contract before delegation, as far as
// the task's words and files can (the workspace completes it before the first
// attempt: see AddStackCriteria). An explicit type (verifiable, advisory or skip)
// wins: GeneratedFrom becomes "user" when unset, and a verifiable contract that lists
// no criteria gets the generated text criteria (stamped GeneratedAt now); an explicit
// skip gets no generated criteria at all. Type auto or empty is replaced by
// Generate(title, brief, files, rules, now). Then Verification.Workspace says what the
// workspace must complete (workspaceStep); a Workspace or Stacks the caller sent is
// not kept. An unknown type is left alone for Validate to report. The completion
// contract is not touched; c is not modified (the result shares nothing mutable with
// it).
func ResolveContract(c Contract, title, brief string, files []string, rules Rules, now time.Time) Contract {
	out := c
	out.Completion.Verify = slices.Clone(c.Completion.Verify)
	if c.Completion.Checklist != nil {
		cl := *c.Completion.Checklist
		out.Completion.Checklist = &cl
	}
	if c.Review != nil {
		r := *c.Review
		r.When = slices.Clone(r.When)
		out.Review = &r
	}
	v := c.Verification
	v.Criteria = slices.Clone(v.Criteria)
	for i := range v.Criteria {
		v.Criteria[i].Tools = slices.Clone(v.Criteria[i].Tools)
	}
	if v.GeneratedAt != nil {
		at := *v.GeneratedAt
		v.GeneratedAt = &at
	}
	v.Workspace, v.Stacks = "", nil
	generated := false
	typ := VerificationType(strings.ToLower(strings.TrimSpace(string(v.Type))))
	switch typ {
	case VerifyVerifiable, VerifyAdvisory, VerifySkip:
		v.Type = typ
		if v.GeneratedFrom == "" {
			v.GeneratedFrom = GeneratedUser
		}
		if len(v.Criteria) == 0 && typ == VerifyVerifiable {
			tt := scanTaskText(title, brief)
			v.Criteria = criteriaFor(typ, dedupStrings(append(slices.Clip(files), tt.files...)), rules)
			at := now
			v.GeneratedAt, generated = &at, true
		}
	case "", VerifyAuto:
		judged := v
		v, generated = Generate(title, brief, files, rules, now), true
		// The judge's settings are the author's, whatever generation decides.
		v.Protect, v.TestsMayChange, v.HeldOut = judged.Protect, judged.TestsMayChange, judged.HeldOut
		v.DependenciesMayChange = judged.DependenciesMayChange
	default:
		out.Verification = v
		return out
	}
	v.Workspace = workspaceStep(v, out.Completion, rules, generated)
	out.Verification = v
	return out
}
