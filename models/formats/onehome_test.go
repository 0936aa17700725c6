// Package formats_test holds the rule that keeps one home per format and grammar:
// the packages under models/formats are the only Makefile reader, shell-word
// grammar and glob matcher of the module.
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
}

// forbiddenNames are the names the former copies had (makeTargets, parseMake,
// splitPlainWords, simpleCommands, shellCommands, globMatch, matchGlob,
// matchSegments): a function declared with one of them outside models/formats is
// a reader written again. Names that only use a reader (makeTargetsIn, which
// finds the targets a `make` command line names; MatchFilePattern, built on
// glob.Match) do not match.
var forbiddenNames = []struct {
	re   *regexp.Regexp
	rule string
}{
	{regexp.MustCompile(`(?i)^((parse|read|scan)make(file)?|make(file)?(targets|rules|lines)|makefile)$`), "one Makefile reader: models/formats/makefile"},
	{regexp.MustCompile(`(?i)^(split(plain|shell)?words|shell(split|words|fields|commands)|simplecommands|(split|parse)(command|argv|args)(line)?)$`), "one shell grammar: models/formats/shellword"},
	{regexp.MustCompile(`(?i)^(glob(match(es)?)?|match(glob|segments|wildcard)|wildcardmatch|fnmatch)$`), "one glob matcher: models/formats/glob"},
}

// TestOneHomePerFormat walks the module's non-generated, non-test Go files
// outside models/formats and fails on a forbidden import, call or function name,
// naming the rule broken.
func TestOneHomePerFormat(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
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
			t.Error(strings.Replace(msg, root+string(filepath.Separator), "", 1))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d files read from %s: the walk is not seeing the module", files, root)
	}
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
			for _, fn := range forbiddenNames {
				if fn.re.MatchString(n.Name.Name) {
					out = append(out, fset.Position(n.Pos()).String()+": declares "+n.Name.Name+" ("+fn.rule+")")
				}
			}
		}
		return true
	})
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

// TestOneHomeRuleCatches: the rule reports a second reader of each kind.
func TestOneHomeRuleCatches(t *testing.T) {
	src := `package x
import (
	"path/filepath"
	sh "mvdan.cc/sh/v3/syntax"
)
func makeTargets(s string) []string { return nil }
func splitPlainWords(s string) []string { return nil }
func globMatch(p, n string) bool { ok, _ := filepath.Match(p, n); return ok }
var _ = sh.NewParser
func makeTargetsIn(words []string) {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(check(fset, f), "\n")
	for _, want := range []string{"declares makeTargets (one Makefile reader", "declares splitPlainWords (one shell grammar",
		"declares globMatch (one glob matcher", "uses path/filepath.Match (one glob matcher", "uses mvdan.cc/sh/v3/syntax.NewParser"} {
		if !strings.Contains(got, want) {
			t.Errorf("rule did not report %q; it said:\n%s", want, got)
		}
	}
	if strings.Contains(got, "makeTargetsIn") {
		t.Errorf("rule reported makeTargetsIn, which reads no Makefile:\n%s", got)
	}
}
