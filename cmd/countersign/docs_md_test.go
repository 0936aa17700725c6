package main

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// mdDoc is what the docs test needs of one Markdown file: its headings' anchors, its
// relative links and the places it names command-line flags.
type mdDoc struct {
	path    string            // as given, for messages
	anchors map[string]bool   // GitHub's heading slugs, duplicates numbered
	links   []mdLink          // every link and image that is not a URL
	units   []mdUnit          // code spans, fenced lines and prose that may name flags
	lineOf  func(off int) int // 1-based line of a byte offset
	seen    map[string]int    // slug → times used, for numbering duplicates
}

// mdLink is one relative link: its destination as written and the line it is on.
type mdLink struct {
	dest string
	line int
}

// mdUnit is one piece of text that may name flags: a code span, one logical line of a
// code block, or a paragraph's prose; code says whether it was code.
type mdUnit struct {
	text string
	line int
	code bool
}

// urlScheme marks a destination that is a URL (http:, mailto:, …), not a relative path.
var urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

var mdParser = goldmark.New(goldmark.WithExtensions(extension.GFM)).Parser()

// parseDoc reads path and collects its anchors, links and flag-naming units.
func parseDoc(path string) (*mdDoc, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseDocSource(path, src), nil
}

// parseDocSource is parseDoc on bytes already read, so the checker's own test can feed
// it a document that is not on disk.
func parseDocSource(path string, src []byte) *mdDoc {
	d := &mdDoc{path: path, anchors: map[string]bool{}, seen: map[string]int{}}
	starts := []int{0}
	for i, b := range src {
		if b == '\n' {
			starts = append(starts, i+1)
		}
	}
	d.lineOf = func(off int) int {
		lo, hi := 0, len(starts)
		for lo+1 < hi {
			mid := (lo + hi) / 2
			if starts[mid] <= off {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo + 1
	}
	root := mdParser.Parse(text.NewReader(src))
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		return d.visit(n, src), nil
	})
	return d
}

// visit records what one node contributes and says whether to look inside it.
func (d *mdDoc) visit(n ast.Node, src []byte) ast.WalkStatus {
	switch n := n.(type) {
	case *ast.Heading:
		d.addAnchor(inlineText(n, src))
	case *ast.Link:
		d.addLink(string(n.Destination), d.lineNear(n, src))
	case *ast.Image:
		d.addLink(string(n.Destination), d.lineNear(n, src))
	case *ast.CodeSpan:
		d.units = append(d.units, mdUnit{text: inlineText(n, src), line: d.lineNear(n, src), code: true})
		return ast.WalkSkipChildren
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		d.addBlock(n, src)
		return ast.WalkSkipChildren
	case *ast.Text:
		d.units = append(d.units, mdUnit{text: string(n.Segment.Value(src)), line: d.lineOf(n.Segment.Start)})
	}
	return ast.WalkContinue
}

// addBlock splits a code block into logical lines: a line ending in a backslash, or a
// line indented under a command and starting with "[" or "-", continues the one before.
func (d *mdDoc) addBlock(n ast.Node, src []byte) {
	lines := n.Lines()
	var cur strings.Builder
	curLine := 0
	flush := func() {
		if cur.Len() > 0 {
			d.units = append(d.units, mdUnit{text: cur.String(), line: curLine, code: true})
		}
		cur.Reset()
	}
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		l := strings.TrimRight(string(seg.Value(src)), "\n")
		trimmed := strings.TrimLeft(l, " \t")
		continues := cur.Len() > 0 && (strings.HasSuffix(strings.TrimSpace(cur.String()), "\\") ||
			(len(trimmed) < len(l) && (strings.HasPrefix(trimmed, "[") || strings.HasPrefix(trimmed, "-"))))
		if !continues {
			flush()
			curLine = d.lineOf(seg.Start)
		}
		cur.WriteString(" " + trimmed)
	}
	flush()
}

// lineNear is the line of the first text inside n, or of its parent block.
func (d *mdDoc) lineNear(n ast.Node, src []byte) int {
	for c := n.FirstChild(); c != nil; c = c.FirstChild() {
		if t, ok := c.(*ast.Text); ok {
			return d.lineOf(t.Segment.Start)
		}
	}
	for p := n; p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			return d.lineOf(p.Lines().At(0).Start)
		}
	}
	return 0
}

// addLink keeps destinations that are relative: no scheme, not protocol-relative.
func (d *mdDoc) addLink(dest string, line int) {
	if dest == "" || strings.HasPrefix(dest, "//") || urlScheme.MatchString(dest) {
		return
	}
	d.links = append(d.links, mdLink{dest: dest, line: line})
}

// addAnchor adds a heading's slug the way GitHub makes it: lower case, every character
// that is not a letter, a digit, a mark, "-" or "_" dropped, spaces made "-", and a
// repeated slug numbered -1, -2, ….
func (d *mdDoc) addAnchor(heading string) {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	slug := b.String()
	if k := d.seen[slug]; k > 0 {
		d.seen[slug] = k + 1
		slug += "-" + strconv.Itoa(k)
	} else {
		d.seen[slug] = 1
	}
	d.anchors[slug] = true
}

// inlineText is the plain text of an inline container: text, strings and code spans,
// without the Markdown around them.
func inlineText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
			if c.SoftLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// resolve splits a relative link into the file it names (relative to the document's
// folder; the document itself for "#anchor") and its anchor.
func (d *mdDoc) resolve(dest string) (file, anchor string) {
	file, anchor, _ = strings.Cut(dest, "#")
	if file == "" {
		return d.path, anchor
	}
	if q := strings.IndexByte(file, '?'); q >= 0 {
		file = file[:q]
	}
	if u, err := url.PathUnescape(file); err == nil {
		file = u
	}
	return filepath.Join(filepath.Dir(d.path), filepath.FromSlash(file)), anchor
}
