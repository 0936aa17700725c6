package pages_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// axeVersion is the axe-core release .ci/run installs (its axe_version line); the
// tests check that the script they inject is this release.
const axeVersion = "4.14.1"

// axeEnv names the path of axe-core's axe.min.js; .ci/run exports it.
const axeEnv = "COUNTERSIGN_AXE"

// axeTags are the rules axe runs: WCAG 2.0, 2.1 and 2.2 levels A and AA.
var axeTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"}

// axeSource is axe.min.js, read once per test binary.
var axeSource struct {
	once sync.Once
	path string
	text string
	err  error
}

// axeDefaultPath is where .ci/run installs the pinned axe-core when XDG_CACHE_HOME is
// unset, so that a local `go test` finds it without the variable.
func axeDefaultPath() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "countersign", "axe-core", axeVersion, "node_modules", "axe-core", "axe.min.js")
}

// axeScript returns the text of axe.min.js from $COUNTERSIGN_AXE (or the default
// install path), or skips the test (fails it with CI=true) when it is missing.
func axeScript(t *testing.T) string {
	t.Helper()
	axeSource.once.Do(func() {
		axeSource.path = os.Getenv(axeEnv)
		if axeSource.path == "" {
			axeSource.path = axeDefaultPath()
		}
		raw, err := os.ReadFile(axeSource.path)
		axeSource.text, axeSource.err = string(raw), err
	})
	if axeSource.err != nil {
		msg := fmt.Sprintf("axe-core %s not found (%v); install it with .ci/run or set %s to its axe.min.js", axeVersion, axeSource.err, axeEnv)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return axeSource.text
}

// axeViolation is one rule axe found broken, with the elements that break it.
type axeViolation struct {
	ID     string    `json:"id"`
	Impact string    `json:"impact"`
	Help   string    `json:"help"`
	Nodes  []axeNode `json:"nodes"`
}

// axeNode is one element that breaks a rule: its CSS path and axe's summary of why.
type axeNode struct {
	Target  string `json:"target"`
	Summary string `json:"summary"`
}

// axeRun is the page-side call: axe.run over the whole document with axeTags' rules,
// reporting violations only, each reduced to what a reader needs.
const axeRun = `(async (tags) => {
	const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
	return {version: axe.version, violations: r.violations.map(v => ({
		id: v.id, impact: v.impact || '', help: v.help,
		nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: (n.failureSummary || '').replace(/\s+/g, ' ')})),
	}))};
})(%s)`

// axeViolations injects axe-core into the current page (through the DevTools
// protocol, which the page's Content-Security-Policy does not govern) and returns what
// it finds against axeTags.
func axeViolations(t *testing.T, ctx context.Context) []axeViolation {
	t.Helper()
	src := axeScript(t)
	type result struct {
		Version    string         `json:"version"`
		Violations []axeViolation `json:"violations"`
	}
	tags := `["` + strings.Join(axeTags, `","`) + `"]`
	var r result
	err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`if (!window.axe) {`+src+`
}`),
		read(chromedp.Evaluate[result](fmt.Sprintf(axeRun, tags), chromedp.EvalAwaitPromise), &r),
	)
	if err != nil {
		t.Fatalf("run axe-core: %v", err)
	}
	if r.Version != axeVersion {
		t.Fatalf("%s is axe-core %q, the tests pin %s", axeSource.path, r.Version, axeVersion)
	}
	return r.Violations
}

// checkAxe runs axe-core on the current page and reports every violation as a test
// error naming page: the rule, its help text and each offending element with axe's
// summary.
func checkAxe(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	if vs := axeViolations(t, ctx); len(vs) > 0 {
		t.Errorf("%s: %d accessibility rule(s) broken:\n%s", page, len(vs), formatViolations(vs))
	}
}

// formatViolations lists violations one rule a paragraph, one element a line.
func formatViolations(vs []axeViolation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  [%s] %s (%s)\n", v.ID, v.Help, v.Impact)
		for i, n := range v.Nodes {
			if i == 8 {
				fmt.Fprintf(&b, "      … and %d more\n", len(v.Nodes)-i)
				break
			}
			fmt.Fprintf(&b, "    - %s: %s\n", n.Target, n.Summary)
		}
	}
	return b.String()
}

// TestAxeVersionPinnedOnce: the version the tests check is the one .ci/run installs.
func TestAxeVersionPinnedOnce(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^axe_version=(\S+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal(".ci/run has no axe_version= line")
	}
	if string(m[1]) != axeVersion {
		t.Fatalf(".ci/run pins axe-core %s, the tests %s", m[1], axeVersion)
	}
}
