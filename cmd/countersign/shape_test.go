package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The source-shape rule of issue #32: no file over maxFileLines and no function
// over maxFuncLines, outside generated code and table-driven data. The limits are
// where a file or a function stops fitting in one reading; past them a change
// needs a map of the unit before it can be made.
const (
	maxFileLines = 600
	maxFuncLines = 80
)

// TestSourceShape walks the module's Go files and fails naming every file and
// function over the limits.
func TestSourceShape(t *testing.T) {
	var failed []string
	for _, o := range shapeOffenders(t, moduleRoot(t)) {
		failed = append(failed, o.String())
	}
	if len(failed) > 0 {
		t.Errorf("%d files or functions over the shape limits (%d lines a file, %d a function):\n%s",
			len(failed), maxFileLines, maxFuncLines, strings.Join(failed, "\n"))
	}
}

// shapeOffender is one file or function over its limit. key is "path" for a file,
// "path:Func" for a function, where a method is "Type.Method".
type shapeOffender struct {
	key   string
	lines int
	limit int
}

func (o shapeOffender) String() string {
	return fmt.Sprintf("%s %d lines (limit %d)", o.key, o.lines, o.limit)
}

// moduleRoot is the directory holding the module's go.mod, found upwards from
// the test's working directory so the test runs from any package dir.
func moduleRoot(t *testing.T) string {
	t.Helper()
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
			t.Fatal("no go.mod above the working directory")
		}
		dir = parent
	}
}

// shapeOffenders parses every Go file of the module (not nested modules such as
// bench/river, not testdata, not generated files) and returns the offenders,
// sorted by key.
func shapeOffenders(t *testing.T, root string) []shapeOffender {
	t.Helper()
	var out []shapeOffender
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(root, path, d.Name())
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		found, err := fileOffenders(path, filepath.ToSlash(rel))
		out = append(out, found...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// skipDir leaves out what is not this module's hand-written source: nested
// modules (they have their own go.mod and their own rules), testdata, vendored
// and hidden directories.
func skipDir(root, path, name string) error {
	if path == root {
		return nil
	}
	if name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") {
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
		return filepath.SkipDir
	}
	return nil
}

// fileOffenders measures one file. Generated files (the standard "Code generated
// ... DO NOT EDIT." header, which covers templ's *_templ.go) are nobody's to
// shorten and are skipped.
func fileOffenders(path, rel string) ([]shapeOffender, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) || strings.HasSuffix(rel, "_templ.go") {
		return nil, nil
	}
	tf := fset.File(f.Pos())
	data := tableLines(fset, f)
	var out []shapeOffender
	// A test file's table rows are test data, which the rule leaves out; a
	// production file counts every line, since its size is what a reader faces.
	lines := tf.LineCount()
	if strings.HasSuffix(rel, "_test.go") {
		lines -= len(data)
	}
	if lines > maxFileLines {
		out = append(out, shapeOffender{key: rel, lines: lines, limit: maxFileLines})
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
		n := 0
		for l := start; l <= end; l++ {
			if !data[l] {
				n++
			}
		}
		if n > maxFuncLines {
			out = append(out, shapeOffender{key: rel + ":" + funcName(fn), lines: n, limit: maxFuncLines})
		}
	}
	return out, nil
}

// tableLines returns the lines that are table data: the rows of slice, array and
// map literals, minus any function literal inside them. A function that is "a
// table plus a loop over it" (the table-driven test, a registry of tools, a list
// of stacks) reads as data followed by a few lines of logic; its rows are not
// logic, and splitting them across functions would only scatter the table. The
// logic around the table still counts against the limit, and so does code hidden
// in the table as closures.
func tableLines(fset *token.FileSet, f *ast.File) map[int]bool {
	data := map[int]bool{}
	var code [][2]int
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || !isTable(lit) {
			return true
		}
		// The opening and closing lines hold the type and the brace, which the
		// code around the table owns.
		for l := fset.Position(lit.Lbrace).Line + 1; l < fset.Position(lit.Rbrace).Line; l++ {
			data[l] = true
		}
		ast.Inspect(lit, func(n ast.Node) bool {
			if fn, ok := n.(*ast.FuncLit); ok {
				code = append(code, [2]int{fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line})
			}
			return true
		})
		return false
	})
	for _, c := range code {
		for l := c[0]; l <= c[1]; l++ {
			delete(data, l)
		}
	}
	return data
}

// isTable reports whether a composite literal is a collection: a slice, an array
// or a map literal with at least two elements.
func isTable(lit *ast.CompositeLit) bool {
	if len(lit.Elts) < 2 {
		return false
	}
	switch lit.Type.(type) {
	case *ast.ArrayType, *ast.MapType:
		return true
	}
	return false
}

// funcName is "Func" for a function and "Type.Method" for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		}
		break
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
