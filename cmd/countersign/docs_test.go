package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// repoRoot is the module's root, where README.md and docs/ live.
const repoRoot = "../.."

// foreignPrograms start command lines whose flags are not countersign's: the flags of
// `claude mcp add --transport …` or `go test -bench …` are those programs' business.
var foreignPrograms = map[string]bool{
	"claude": true, "codex": true, "gemini": true, "qwen": true, "go": true, "git": true,
	"npm": true, "pnpm": true, "yarn": true, "make": true, "curl": true, "python3": true,
	"pytest": true, "cargo": true, "node": true, "chromium": true, "perf": true,
	"apt-get": true, "ruff": true, "mypy": true, "jest": true, "vitest": true,
	"mocha": true, "sh": true, "bash": true, "cd": true, "pip": true, "unshare": true,
	"setpriv": true, "cosign": true, "jq": true,
}

// foreignFlags are flags the docs name on their own, in prose, that belong to another
// program (named beside each); every other bare flag must be countersign's.
var foreignFlags = map[string]string{
	"output-format":   "claude (the claude preset's stream-json output)",
	"verbose":         "claude (the claude preset)",
	"permission-mode": "claude (the claude preset)",
	"max-budget-usd":  "claude (the claude preset's budget fence)",
	"scope":           "claude mcp add",
	"transport":       "claude mcp add",
	"header":          "claude mcp add",
	"is-ancestor":     "git merge-base",
	"approval-mode":   "gemini (the gemini preset)",
	"test":            "node (node --test, a test runner the judge reads)",
}

// docFiles are the pages the test keeps true: README.md and every docs/*.md.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md under %s: %v", repoRoot, err)
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, files...)
}

// flagSets builds every subcommand's real flag set, as the binary does, by asking each
// for its help: name → flag name → usage.
func flagSets(t *testing.T) map[string]map[string]string {
	t.Helper()
	sets := map[string]map[string]string{}
	name := regexp.MustCompile(`^  -([A-Za-z0-9][\w.-]*)`)
	for _, c := range commands() {
		var out bytes.Buffer
		if err := c.run(context.Background(), []string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("countersign %s -h: %v, want flag.ErrHelp\n%s", c.name, err, out.String())
		}
		set := map[string]string{}
		last := ""
		for _, l := range strings.Split(out.String(), "\n") {
			if m := name.FindStringSubmatch(l); m != nil {
				last = m[1]
				set[last] = ""
			} else if last != "" && strings.HasPrefix(l, "    \t") {
				set[last] += strings.TrimSpace(l) + " "
			}
		}
		sets[c.name] = set
	}
	return sets
}

// TestDocsLinksAndFlags keeps README.md and docs/*.md true: every relative link names
// a file that exists (and a heading of it, for "#anchor"), and every --flag they name
// is a flag of the countersign subcommand it is given to, or of some subcommand when
// none is named.
func TestDocsLinksAndFlags(t *testing.T) {
	docs := map[string]*mdDoc{}
	var paths []string
	for _, f := range docFiles(t) {
		d, err := parseDoc(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[filepath.Clean(f)] = d
		paths = append(paths, f)
	}
	problems := checkDocs(paths, docs, flagSets(t))
	problems = append(problems, unlinkedPages(docs[filepath.Clean(paths[0])], paths[1:])...)
	problems = append(problems, undocumentedFlags(paths, docs, flagSets(t))...)
	for _, p := range problems {
		t.Error(p)
	}
}

// undocumentedFlags names the flags of each subcommand the docs never name, either
// given to that subcommand or on their own.
func undocumentedFlags(paths []string, docs map[string]*mdDoc, sets map[string]map[string]string) []string {
	named := map[flagUse]bool{}
	for _, p := range paths {
		for _, u := range docs[filepath.Clean(p)].units {
			for _, f := range unitFlags(u, sets) {
				named[flagUse{name: f.name, command: f.command}] = true
			}
		}
	}
	var problems []string
	for _, c := range commands() {
		for name := range sets[c.name] {
			if !named[flagUse{name: name, command: c.name}] && !named[flagUse{name: name}] {
				problems = append(problems, fmt.Sprintf("no docs page names --%s of countersign %s", name, c.name))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// unlinkedPages names the docs/ pages the README does not link to: the README is the
// front page, and every page is reached from it.
func unlinkedPages(readme *mdDoc, pages []string) []string {
	linked := map[string]bool{}
	for _, l := range readme.links {
		file, _ := readme.resolve(l.dest)
		linked[filepath.Clean(file)] = true
	}
	var problems []string
	for _, p := range pages {
		if !linked[filepath.Clean(p)] {
			problems = append(problems, fmt.Sprintf("%s links no %s: every docs page is reached from the front page", readme.path, p))
		}
	}
	return problems
}

// checkDocs returns one message per broken link, missing anchor or unknown flag.
func checkDocs(paths []string, docs map[string]*mdDoc, sets map[string]map[string]string) []string {
	var problems []string
	for _, p := range paths {
		d := docs[filepath.Clean(p)]
		problems = append(problems, checkLinks(d, docs)...)
		problems = append(problems, checkFlags(d, sets)...)
	}
	return problems
}

// checkLinks resolves d's relative links against the file system and the headings of
// the Markdown files they name.
func checkLinks(d *mdDoc, docs map[string]*mdDoc) []string {
	var problems []string
	for _, l := range d.links {
		file, anchor := d.resolve(l.dest)
		target, ok := docs[filepath.Clean(file)]
		if !ok {
			if _, err := os.Stat(file); err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: no such file %s", d.path, l.line, l.dest, file))
				continue
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			parsed, err := parseDoc(file)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %v", d.path, l.line, l.dest, err))
				continue
			}
			target = parsed
		}
		if anchor != "" && !target.anchors[strings.ToLower(anchor)] {
			problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s has no heading #%s", d.path, l.line, l.dest, file, anchor))
		}
	}
	return problems
}

var (
	// flagRef is a long flag as the docs write it: --name, --name=value, --prefix-*.
	flagRef = regexp.MustCompile("(?:^|[\\s\\[(|,\"'=`])--([a-z][a-z0-9-]*)(\\*?)")
	// subcommandRef is "countersign" followed by the words that may name a subcommand.
	subcommandRef = regexp.MustCompile(`(?:^|[\s/])countersign\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?`)
)

// checkFlags checks every flag d names against the flag sets.
func checkFlags(d *mdDoc, sets map[string]map[string]string) []string {
	var problems []string
	for _, u := range d.units {
		for _, f := range unitFlags(u, sets) {
			if msg := f.check(sets); msg != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s (in %q)", d.path, u.line, msg, strings.TrimSpace(u.text)))
			}
		}
	}
	return problems
}

// flagUse is one flag named in the docs, with the subcommand it is given to ("" for
// none named).
type flagUse struct {
	name, command string
	prefix        bool // written --name-*: any flag starting with name
}

// unitFlags finds the flags of one unit and whom they are given to: flags after
// "countersign SUBCOMMAND" are that subcommand's, a line that starts with another
// program is skipped, and the rest must be some subcommand's.
func unitFlags(u mdUnit, sets map[string]map[string]string) []flagUse {
	s := u.text
	fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(s), "$ "))
	if len(fields) > 0 && foreignPrograms[fields[0]] && !subcommandRef.MatchString(s) {
		return nil
	}
	command, from := "", 0
	if m := subcommandRef.FindStringSubmatchIndex(s); m != nil {
		one := s[m[2]:m[3]]
		if m[4] >= 0 {
			if two := one + " " + s[m[4]:m[5]]; sets[two] != nil {
				command, from = two, m[5]
			}
		}
		if command == "" && sets[one] != nil {
			command, from = one, m[3]
		}
	}
	var uses []flagUse
	for _, m := range flagRef.FindAllStringSubmatchIndex(s, -1) {
		use := flagUse{name: s[m[2]:m[3]], prefix: m[5] > m[4]}
		if command != "" && m[2] > from {
			use.command = command
		}
		uses = append(uses, use)
	}
	return uses
}

// check says what is wrong with a flag use, or "" when it is a real flag.
func (f flagUse) check(sets map[string]map[string]string) string {
	has := func(set map[string]string) bool {
		for name := range set {
			if name == f.name || (f.prefix && strings.HasPrefix(name, f.name)) {
				return true
			}
		}
		return false
	}
	if f.command != "" {
		if has(sets[f.command]) {
			return ""
		}
		return fmt.Sprintf("countersign %s has no flag --%s", f.command, f.name)
	}
	if _, ok := foreignFlags[f.name]; ok {
		return ""
	}
	for _, set := range sets {
		if has(set) {
			return ""
		}
	}
	return fmt.Sprintf("no countersign subcommand has the flag --%s", f.name)
}

// configRow is a row of the configuration table in docs/operations.md: a flag of
// serve and the environment variables that set it.
var configRow = regexp.MustCompile("^\\| `--([a-z-]+)` \\| ((?:`[A-Z_]+`(?:, )?)+) \\|")

// checkConfigTable checks that each variable the configuration table names for a flag
// is one the flag reads, as its usage says ("(env NAME …)").
func checkConfigTable(path string, serve map[string]string) ([]string, int) {
	src, err := os.ReadFile(path)
	if err != nil {
		return []string{err.Error()}, 0
	}
	var problems []string
	rows := 0
	for i, l := range strings.Split(string(src), "\n") {
		m := configRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		rows++
		usage, ok := serve[m[1]]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s:%d: countersign serve has no flag --%s", path, i+1, m[1]))
			continue
		}
		_, env, _ := strings.Cut(usage, "(env ")
		for _, v := range strings.Split(m[2], ", ") {
			if v = strings.Trim(v, "`"); !regexp.MustCompile(`\b` + v + `\b`).MatchString(env) {
				problems = append(problems, fmt.Sprintf("%s:%d: --%s does not read %s (its usage: %s)", path, i+1, m[1], v, strings.TrimSpace(usage)))
			}
		}
	}
	return problems, rows
}

// TestDocsConfigurationTable keeps the configuration table true and whole: each
// variable it names is one its flag reads, and every flag of serve and runner has a row.
func TestDocsConfigurationTable(t *testing.T) {
	path := filepath.Join(repoRoot, "docs", "operations.md")
	sets := flagSets(t)
	problems, rows := checkConfigTable(path, sets["serve"])
	if rows < 20 {
		t.Errorf("found %d rows of the configuration table in %s, want the whole table", rows, path)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	inTable := map[string]bool{}
	for _, l := range strings.Split(string(src), "\n") {
		if cell, _, ok := strings.Cut(strings.TrimPrefix(l, "| "), " |"); ok && strings.HasPrefix(l, "| `--") {
			for _, m := range flagRef.FindAllStringSubmatch(cell, -1) {
				inTable[m[1]] = true
			}
		}
	}
	for _, command := range []string{"serve", "runner"} {
		for name := range sets[command] {
			if !inTable[name] {
				problems = append(problems, fmt.Sprintf("%s: the configuration table has no row for --%s of countersign %s", path, name, command))
			}
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestDocsCheckerCatches shows the checker failing where it should: a missing file, a
// missing anchor, a flag no subcommand has, a flag given to a subcommand without it;
// and passing where it should: a numbered duplicate heading, a --prefix-* family,
// another program's flags.
func TestDocsCheckerCatches(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	if err := os.WriteFile(page, []byte("# Page\n\n## Two words: here\n\n## Two words: here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := strings.Join([]string{
		"# Readme", "",
		"[ok](page.md) [ok](page.md#two-words-here) [ok](page.md#two-words-here-1) [ok](#readme)",
		"[gone](missing.md) [bad anchor](page.md#three-words) ![img](img/none.png) [web](https://example.com/x.md)", "",
		"Run `countersign token create bob --expires never` and `countersign agent update bob --sandbox-* …`.",
		"Bad: `countersign token create bob --kind worker`, `--no-such-flag`, and --also-not-one.", "",
		"```sh", "go test -run '^$' -bench X --whatever ./runner/", "countersign agent add quinn --kind worker \\", "  --bogus-flag", "```",
	}, "\n")
	readme := filepath.Join(dir, "README.md")
	docs := map[string]*mdDoc{readme: parseDocSource(readme, []byte(src))}
	if d, err := parseDoc(page); err != nil {
		t.Fatal(err)
	} else {
		docs[page] = d
	}
	got := checkDocs([]string{readme}, docs, flagSets(t))
	want := []string{
		`link "missing.md": no such file`,
		`link "page.md#three-words": ` + page + ` has no heading #three-words`,
		`link "img/none.png": no such file`,
		`countersign token create has no flag --kind`,
		`no countersign subcommand has the flag --no-such-flag`,
		`no countersign subcommand has the flag --also-not-one`,
		`countersign agent add has no flag --bogus-flag`,
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no problem says %q; got:\n%s", w, strings.Join(got, "\n"))
		}
	}
}
