package models

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Contract generation (verifiable-task-completion-prd.md): before a task is delegated,
// its verification contract is classified as verifiable, advisory or skip from its
// words and its expected files, using editable ProjectRules.

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
func DefaultRules() ProjectRules {
	return ProjectRules{
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
func (r ProjectRules) Validate() error {
	var fe FieldErrors
	if msg := PricesProblem(r.Prices); msg != "" {
		fe.Add("prices", msg)
	}
	ValidateHats(r.Hats, &fe)
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
		validateCommand(key, r.Activities[name], &fe)
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
			if _, err := path.Match(p, ""); err != nil {
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
	validateStacks(r.Stacks, &fe)
	return fe.Err()
}

// Words that start an implementation task: with one of these leading the title, an
// advisory word later in the text ("fix the bug the audit found") does not make the
// task advisory.
var implementationVerbs = toSet(
	"add", "implement", "fix", "build", "create", "refactor", "remove", "delete", "rename",
	"migrate", "replace", "support", "handle", "upgrade", "bump", "change", "convert",
	"extract", "move", "wire", "expose", "enable", "disable", "introduce", "port",
	"optimize", "optimise", "speed", "make", "update", "write", "allow", "prevent", "ensure",
	"validate", "reject", "return", "store", "persist", "cache", "limit", "retry", "split",
	"merge", "parse", "render", "show", "hide", "display", "log", "emit", "test", "cover",
	"reduce", "increase", "improve", "switch", "drop", "deprecate", "restore", "set", "use",
	"generate", "send", "load", "save", "sort", "filter", "paginate", "translate", "resize",
	"repair", "patch", "reuse", "extend", "connect", "integrate", "configure", "install",
	"upload", "download", "export", "import", "stop", "start", "run", "serve", "schedule",
)

// Words skipped when looking for the verb that leads a task ("We need to investigate").
var leadFillers = toSet(
	"please", "we", "i", "you", "should", "need", "needs", "to", "must", "let", "lets", "s",
	"can", "could", "the", "a", "an", "task", "todo", "and", "then", "first", "quickly",
	"kindly", "also", "just", "go", "ahead", "will", "would", "someone", "somebody",
)

// Words skipped in the object phrase right after the lead verb ("Update the docs").
var objectFillers = toSet(
	"a", "an", "the", "some", "our", "new", "this", "that", "these", "those", "all", "more",
	"missing", "short", "brief", "quick", "small", "detailed", "outdated", "stale", "broken",
)

// Suffixes that keep a rule word's meaning: investigat+ing, analys+is, plan+n+ing.
var wordSuffixes = toSet(
	"", "s", "es", "e", "ed", "d", "ing", "ings", "ion", "ions", "ation", "ations", "atory",
	"er", "ers", "or", "ors", "ment", "ments", "al", "is", "t", "ts", "ive", "ies",
)

func toSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// wordMatcher matches rule words (whole words and their common forms) and rule
// phrases ("look into": the first word in any form, the rest exactly).
type wordMatcher struct{ entries []ruleWord }

type ruleWord struct {
	stems []string
	rest  []string
}

// newWordMatcher derives stems once per call: the word itself, without a final e
// (investigat-e), with ze as s (analyze → analys, for analysis), with y as i
// (study → studi, for studies).
func newWordMatcher(words []string) wordMatcher {
	m := wordMatcher{entries: make([]ruleWord, 0, len(words))}
	for _, phrase := range words {
		parts := strings.Fields(strings.ToLower(phrase))
		if len(parts) == 0 {
			continue
		}
		w := parts[0]
		stems := []string{w}
		if len(w) > 3 && strings.HasSuffix(w, "e") {
			stems = append(stems, w[:len(w)-1])
		}
		if len(w) > 3 && strings.HasSuffix(w, "ze") {
			stems = append(stems, w[:len(w)-2]+"s")
		}
		if len(w) > 3 && strings.HasSuffix(w, "y") {
			stems = append(stems, w[:len(w)-1]+"i")
		}
		m.entries = append(m.entries, ruleWord{stems: stems, rest: parts[1:]})
	}
	return m
}

// matchAt reports whether a rule word or phrase starts at words[i].
func (m wordMatcher) matchAt(words []string, i int) bool {
	for _, e := range m.entries {
		if i+len(e.rest) >= len(words) || !wordForm(words[i], e.stems) {
			continue
		}
		if slices.Equal(words[i+1:i+1+len(e.rest)], e.rest) {
			return true
		}
	}
	return false
}

// agentSuffixes turn an activity into a person or a thing (reviewer, planner,
// evaluator): "add a planner" is not planning.
var agentSuffixes = toSet("er", "ers", "or", "ors")

func wordForm(tok string, stems []string) bool {
	for _, st := range stems {
		if !strings.HasPrefix(tok, st) {
			continue
		}
		rest := tok[len(st):]
		if wordSuffixes[rest] && !agentSuffixes[rest] {
			return true
		}
		// A doubled final consonant: plan → planning, planned.
		if len(rest) > 1 && rest[0] == st[len(st)-1] && rest[1:] != "" && wordSuffixes[rest[1:]] && !agentSuffixes[rest[1:]] {
			return true
		}
	}
	return false
}

// taskText is a task's title and description split into lower-case words, with the
// file-looking tokens set apart.
type taskText struct {
	words   []string
	lead    int // index in words of the verb that leads the task, -1 if none
	leadEnd int // end (exclusive) of the part (title or description) holding the lead
	files   []string
}

func scanTaskText(title, description string) taskText {
	tt := taskText{lead: -1}
	titleWords := tt.scan(title)
	tt.scan(description)
	lo, hi := 0, titleWords
	if titleWords == 0 {
		lo, hi = 0, len(tt.words)
	}
	for i := lo; i < hi; i++ {
		if !leadFillers[tt.words[i]] {
			tt.lead, tt.leadEnd = i, hi
			break
		}
	}
	return tt
}

// scan appends the words and files of s and returns how many words it added.
func (tt *taskText) scan(s string) int {
	n := len(tt.words)
	for _, chunk := range strings.Fields(s) {
		if f := fileToken(chunk); f != "" {
			tt.files = append(tt.files, f)
			continue
		}
		start := -1
		for i, r := range chunk {
			isWord := r < unicode.MaxASCII && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
				r >= unicode.MaxASCII && unicode.IsLetter(r)
			if isWord && start < 0 {
				start = i
			} else if !isWord && start >= 0 {
				tt.words = append(tt.words, strings.ToLower(chunk[start:i]))
				start = -1
			}
		}
		if start >= 0 {
			tt.words = append(tt.words, strings.ToLower(chunk[start:]))
		}
	}
	return len(tt.words) - n
}

// near returns the indices of up to k words of the object phrase after the lead
// verb, fillers left out.
func (tt *taskText) near(k int) []int {
	if tt.lead < 0 {
		return nil
	}
	var out []int
	for i := tt.lead + 1; i < tt.leadEnd && len(out) < k; i++ {
		if !objectFillers[tt.words[i]] {
			out = append(out, i)
		}
	}
	return out
}

var fileExtensions = toSet(
	"go", "mod", "sum", "templ", "ts", "tsx", "js", "jsx", "mjs", "cjs", "py", "rb", "rs", "java",
	"kt", "swift", "c", "h", "cc", "cpp", "hpp", "cs", "php", "sql", "md", "markdown", "rst", "txt",
	"adoc", "yaml", "yml", "json", "toml", "ini", "cfg", "conf", "env", "html", "htm", "css",
	"scss", "sass", "less", "vue", "svelte", "sh", "bash", "proto", "graphql", "gql", "xml", "csv",
	"lock", "tf", "gradle", "dockerfile", "gitignore", "svg", "png",
)

var fileNames = toSet("makefile", "dockerfile", "readme", "license", "changelog", "contributing", "authors", "notice", "procfile", "jenkinsfile")

// Frameworks written like files ("Node.js") that are not files of the task.
var notFiles = toSet("node.js", "next.js", "vue.js", "nuxt.js", "react.js", "express.js", "three.js", "d3.js", "deno.js", "chart.js")

// fileToken returns the path named by a whitespace-free chunk of text, or "" when the
// chunk does not look like a file: it must end in a known extension or be a known
// file name (README, Makefile, …) or be a directory written with a trailing slash.
func fileToken(chunk string) string {
	c := strings.TrimLeft(chunk, "`'\"([<{*")
	c = strings.TrimRight(c, "`'\")]>},;:!?*.")
	if c == "" || strings.Contains(c, "://") || strings.ContainsAny(c, "@=") {
		return ""
	}
	hasLetter := false
	for _, r := range c {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			hasLetter = true
		case r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == '/' || r == '+':
		default:
			return ""
		}
	}
	if !hasLetter {
		return ""
	}
	if strings.HasSuffix(c, "/") {
		if strings.Count(c, "/") > 1 || len(c) > 1 && c[0] != '/' {
			return c
		}
		return ""
	}
	base := c[strings.LastIndexByte(c, '/')+1:]
	lower := strings.ToLower(base)
	if notFiles[lower] {
		return ""
	}
	if dot := strings.LastIndexByte(lower, '.'); dot >= 0 && dot < len(lower)-1 {
		if fileExtensions[lower[dot+1:]] && (dot > 0 || lower == ".gitignore" || lower == ".env") {
			return c
		}
	}
	stem := lower
	if dot := strings.IndexByte(stem, '.'); dot > 0 {
		stem = stem[:dot]
	}
	if fileNames[stem] && (base == strings.ToUpper(base) || base[0] >= 'A' && base[0] <= 'Z' || strings.Contains(c, "/")) {
		return c
	}
	return ""
}

// ExtractFiles returns the file-looking tokens of text in order, without duplicates:
// "Update src/components/Toggle.tsx and README.md" → [src/components/Toggle.tsx
// README.md]. A token counts when it ends in a known source or document extension, is
// a well-known file name written capitalised (README, Makefile, LICENSE) or is a
// directory with a trailing slash (src/pages/).
func ExtractFiles(text string) []string {
	var tt taskText
	tt.scan(text)
	return dedupStrings(tt.files)
}

func dedupStrings(in []string) []string {
	var out []string
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

var docExtensions = toSet("md", "markdown", "rst", "txt", "adoc")

// isDocFile reports whether f is documentation: a Markdown/text file, a well-known
// document (README, CHANGELOG, LICENSE, …) or anything under docs/.
func isDocFile(f string) bool {
	f = strings.ToLower(strings.ReplaceAll(f, `\`, "/"))
	for _, seg := range strings.Split(strings.TrimSuffix(f, "/"), "/") {
		if seg == "docs" || seg == "doc" {
			return true
		}
	}
	base := f[strings.LastIndexByte(f, '/')+1:]
	if dot := strings.LastIndexByte(base, '.'); dot >= 0 && docExtensions[base[dot+1:]] {
		return true
	}
	stem := base
	if dot := strings.IndexByte(stem, '.'); dot > 0 {
		stem = stem[:dot]
	}
	switch stem {
	case "readme", "changelog", "license", "contributing", "authors", "notice":
		return true
	}
	return false
}

// MatchFilePattern reports whether file matches a rule's glob. A pattern without a
// slash matches the base name (*.go matches runner/pool.go). A pattern with a slash
// matches any run of whole path segments, so a directory pattern also covers what is
// under it: pages/* matches pages/settings.tsx, src/pages/settings.tsx and
// src/pages/admin/users.tsx. '*' does not cross a slash (path.Match).
func MatchFilePattern(pattern, file string) bool {
	pattern = strings.TrimPrefix(strings.TrimSpace(pattern), "/")
	file = strings.TrimPrefix(strings.ReplaceAll(strings.TrimSpace(file), `\`, "/"), "./")
	file = strings.TrimSuffix(file, "/")
	if pattern == "" || file == "" {
		return false
	}
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, file[strings.LastIndexByte(file, '/')+1:])
		return ok
	}
	for s := 0; s < len(file); {
		for e := s; e <= len(file); e++ {
			if e == len(file) || file[e] == '/' {
				if ok, _ := path.Match(pattern, file[s:e]); ok {
					return true
				}
			}
		}
		next := strings.IndexByte(file[s:], '/')
		if next < 0 {
			break
		}
		s += next + 1
	}
	return false
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
func Classify(title, description string, expectedFiles []string, rules ProjectRules) VerificationType {
	tt := scanTaskText(title, description)
	files := dedupStrings(append(slices.Clip(expectedFiles), tt.files...))
	return classify(&tt, files, rules)
}

func classify(tt *taskText, files []string, rules ProjectRules) VerificationType {
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
func Generate(title, description string, expectedFiles []string, rules ProjectRules, now time.Time) Verification {
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
func criteriaFor(typ VerificationType, files []string, rules ProjectRules) []Criterion {
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
func ResolveContract(c Contract, title, brief string, files []string, rules ProjectRules, now time.Time) Contract {
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
