package contract

import (
	"slices"
	"strings"
	"unicode"

	"github.com/countersign/countersign/models/formats/glob"
)

// The words and files of a task's text, as contract generation reads them: rule-word
// matching with common word forms, the verb that leads a title, file-looking tokens.

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
		return glob.Match(pattern, file[strings.LastIndexByte(file, '/')+1:])
	}
	for s := 0; s < len(file); {
		for e := s; e <= len(file); e++ {
			if e == len(file) || file[e] == '/' {
				if glob.Match(pattern, file[s:e]) {
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
