// Package formats_test holds the rule that keeps one home per format and grammar:
// the packages under models/formats are the only Makefile reader, shell-word
// grammar, glob matcher, package.json (JSON object) reader, TOML reader and INI
// reader of the module.
package formats_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// forbiddenCalls are package-qualified calls that only models/formats may make:
// each is a second glob matcher or a second shell parser.
var forbiddenCalls = map[string]map[string]string{
	"path":                  {"Match": "one glob matcher: call models/formats/glob"},
	"path/filepath":         {"Match": "one glob matcher: call models/formats/glob"},
	"mvdan.cc/sh/v3/syntax": {"NewParser": "one shell grammar: call shellword.Parse (walking its tree is fine)"},
}

// forbiddenImports are libraries that would be a second matcher or splitter.
var forbiddenImports = map[string]string{
	"github.com/bmatcuk/doublestar":     "one glob matcher",
	"github.com/bmatcuk/doublestar/v4":  "one glob matcher",
	"github.com/gobwas/glob":            "one glob matcher",
	"github.com/google/shlex":           "one shell grammar",
	"github.com/mattn/go-shellwords":    "one shell grammar",
	"github.com/kballard/go-shellquote": "one shell grammar",
	"mvdan.cc/sh/v3/shell":              "one shell grammar",
	"github.com/BurntSushi/toml":        "one TOML reader: models/formats/toml",
	"github.com/pelletier/go-toml":      "one TOML reader: models/formats/toml",
	"github.com/pelletier/go-toml/v2":   "one TOML reader: models/formats/toml",
	"github.com/naoina/toml":            "one TOML reader: models/formats/toml",
	"gopkg.in/ini.v1":                   "one INI reader: models/formats/ini",
	"github.com/go-ini/ini":             "one INI reader: models/formats/ini",
	"github.com/buger/jsonparser":       "one JSON object reader: models/formats/pkgjson",
	"github.com/tidwall/gjson":          "one JSON object reader: models/formats/pkgjson",
}

// forbiddenNames are the names the former copies had (makeTargets, parseMake,
// splitPlainWords, simpleCommands, shellCommands, globMatch, matchGlob,
// matchSegments; scanTOML, tomlScanner, parseTOMLKeyString; pyLines, iniHeader;
// parseJSONObject, parseJSONMembers, skipJSONValue, effective): a function or
// type declared with one of them outside models/formats is a reader written
// again. Names that only use a reader (makeTargetsIn, which finds the targets a
// `make` command line names; MatchFilePattern, built on glob.Match; tomlSpec and
// iniSpec, the judge's parts; readBaseJSON, which edits) do not match.
var forbiddenNames = []struct {
	re   *regexp.Regexp
	rule string
}{
	{regexp.MustCompile(`(?i)^((parse|read|scan)make(file)?|make(file)?(targets|rules|lines)|makefile)$`), "one Makefile reader: models/formats/makefile"},
	{regexp.MustCompile(`(?i)^(split(plain|shell)?words|shell(split|words|fields|commands)|simplecommands|(split|parse)(command|argv|args)(line)?)$`), "one shell grammar: models/formats/shellword"},
	{regexp.MustCompile(`(?i)^(glob(match(es)?)?|match(glob|segments|wildcard)|wildcardmatch|fnmatch)$`), "one glob matcher: models/formats/glob"},
	{regexp.MustCompile(`(?i)^((scan|parse|read|decode)(toml|pyproject)(keys?(string)?|doc(ument)?|stmts?|statements?|tables?)?|toml(scanner|reader|parser|stmts?|statements?|tables|keys?|header)|(render|split)tomlkeys?|hastomltable)$`), "one TOML reader: models/formats/toml"},
	{regexp.MustCompile(`(?i)^((scan|parse|read|split)(ini|cfg|setupcfg|toxini)(sections?|headers?|lines?)?|ini(sections|headers?|lines?|scanner|reader|parser)|pylines|splitpylines|hasinisection)$`), "one INI reader: models/formats/ini"},
	{regexp.MustCompile(`(?i)^((scan|parse|read)(json(object|members?)|(package|pkg)json(members|scripts|object)?)|skipjson(value|string|space)?|jsonscanner|effective(members)?|lastmembers)$`), "one JSON object reader: models/formats/pkgjson"},
}

// TestOneHomePerFormat walks the module's non-generated, non-test Go files
// outside models/formats and fails on a forbidden import, call, or function or
// type name, naming the rule broken.
func TestOneHomePerFormat(t *testing.T) {
	root := moduleRoot(t)
	msgs, files, err := checkTree(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range msgs {
		t.Error(msg)
	}
	if files < 100 {
		t.Fatalf("only %d files read from %s: the walk is not seeing the module", files, root)
	}
}

// checkTree checks the non-generated, non-test Go files under root outside
// root/models/formats, and returns the rules they break (positions relative to
// root) and how many files it read.
func checkTree(root string) (msgs []string, files int, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == "models/formats", d.Name() == "testdata", d.Name() == "vendor", d.Name() == "node_modules",
				rel != "." && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		files++
		for _, msg := range check(fset, f) {
			msgs = append(msgs, strings.Replace(msg, root+string(filepath.Separator), "", 1))
		}
		return nil
	})
	return msgs, files, err
}

// check returns the rules file f breaks, each with its position.
func check(fset *token.FileSet, f *ast.File) []string {
	var out []string
	local := map[string]string{} // import name -> path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if rule, ok := forbiddenImports[path]; ok {
			out = append(out, fset.Position(imp.Pos()).String()+": imports "+path+" ("+rule+")")
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = path
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				if rule, ok := forbiddenCalls[local[x.Name]][n.Sel.Name]; ok {
					out = append(out, fset.Position(n.Pos()).String()+": uses "+local[x.Name]+"."+n.Sel.Name+" ("+rule+")")
				}
			}
		case *ast.FuncDecl:
			out = append(out, checkName(fset, n.Name, "")...)
		case *ast.TypeSpec:
			out = append(out, checkName(fset, n.Name, "type ")...)
		}
		return true
	})
	return out
}

// checkName returns the rules a declared name breaks (what: "" for a function,
// "type " for a type).
func checkName(fset *token.FileSet, name *ast.Ident, what string) []string {
	var out []string
	for _, fn := range forbiddenNames {
		if fn.re.MatchString(name.Name) {
			out = append(out, fset.Position(name.Pos()).String()+": declares "+what+name.Name+" ("+fn.rule+")")
		}
	}
	return out
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = parent
	}
}

// TestOneHomeRuleCatches: the rule reports a second reader of each kind, and not
// the names that only use one.
func TestOneHomeRuleCatches(t *testing.T) {
	src := `package x
import (
	"path/filepath"
	sh "mvdan.cc/sh/v3/syntax"
	"github.com/BurntSushi/toml"
	ini "gopkg.in/ini.v1"
)
func makeTargets(s string) []string { return nil }
func splitPlainWords(s string) []string { return nil }
func globMatch(p, n string) bool { ok, _ := filepath.Match(p, n); return ok }
var _ = sh.NewParser
func makeTargetsIn(words []string) {}
type tomlScanner struct{ d []byte }
func scanTOML(d []byte) {}
func parseTOMLKeyString(s string) {}
func pyLines(d []byte) {}
func iniHeader(line string) {}
func parseJSONObject(d []byte) {}
func skipJSONValue(d []byte, p int) {}
func effective() {}
type tomlSpec struct{}
type iniSpec struct{}
func readBaseJSON() {}
func packageScripts(s string) {}
func detectConfigured() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(check(fset, f), "\n")
	for _, want := range []string{"declares makeTargets (one Makefile reader", "declares splitPlainWords (one shell grammar",
		"declares globMatch (one glob matcher", "uses path/filepath.Match (one glob matcher", "uses mvdan.cc/sh/v3/syntax.NewParser",
		"imports github.com/BurntSushi/toml (one TOML reader", "imports gopkg.in/ini.v1 (one INI reader",
		"declares type tomlScanner (one TOML reader", "declares scanTOML (one TOML reader", "declares parseTOMLKeyString (one TOML reader",
		"declares pyLines (one INI reader", "declares iniHeader (one INI reader",
		"declares parseJSONObject (one JSON object reader", "declares skipJSONValue (one JSON object reader",
		"declares effective (one JSON object reader"} {
		if !strings.Contains(got, want) {
			t.Errorf("rule did not report %q; it said:\n%s", want, got)
		}
	}
	for _, user := range []string{"makeTargetsIn", "tomlSpec", "iniSpec", "readBaseJSON", "packageScripts", "detectConfigured"} {
		if strings.Contains(got, " "+user+" ") {
			t.Errorf("rule reported %s, which reads no format itself:\n%s", user, got)
		}
	}

	t.Run("a second reader in a module's file fails the walk", func(t *testing.T) {
		root := t.TempDir()
		write := func(name, body string) {
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("go.mod", "module example.com/m\n")
		write("runner/judge/x.go", "package judge\n\nfunc scanTOML(data []byte) {}\n")
		write("runner/judge/x_test.go", "package judge\n\nfunc parseINI() {}\n")
		write("models/formats/toml/scan.go", "package toml\n\nfunc scanTOML(data []byte) {}\n")
		msgs, files, err := checkTree(root)
		if err != nil {
			t.Fatal(err)
		}
		want := filepath.Join("runner", "judge", "x.go") + ":3:6: declares scanTOML (one TOML reader: models/formats/toml)"
		if files != 1 || len(msgs) != 1 || msgs[0] != want {
			t.Errorf("checkTree read %d files and said %q; want 1 file and %q", files, msgs, want)
		}
	})
}
