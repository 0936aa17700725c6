package pages_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/handlers/internal/handlertest"
	"github.com/countersign/countersign/models/contract"
)

// TestRulesPageStacks: the rules page shows the stacks (detection, commands, when
// they apply, protected paths, results), edits them as YAML with errors beside the
// field, and lets an editor check which stacks a directory on the server matches.
func TestRulesPageStacks(t *testing.T) {
	t.Parallel()
	handlertest.ForEachDialect(t, func(t *testing.T, d string) {
		t.Parallel()
		e := &admEnv{newEnvWith(t, d, envOptions{ledger: pagesLocal})}
		e.human("eve", "editor")
		e.human("dev", "developer")
		c := e.login("eve")
		ctx := context.Background()

		page := c.get("/rules")
		page.want(t, http.StatusOK, `data-testid="stack-go"`, `data-testid="stack-node"`, `data-testid="stack-python"`,
			`data-testid="stack-rust"`, `data-testid="stack-make"`, "when file go.mod", "when script test", "when config pytest",
			"<code>pnpm test</code>", "script test and file pnpm-lock.yaml", "<code>*_test.go</code>", "<code>**/__tests__/**</code>", "<code>go.mod#replace</code>", `data-testid="stack-pins-node"`, "Install, when dependencies may change: <code>npm ci --ignore-scripts --no-audit --no-fund (when file package-lock.json)</code>",
			"go-test-json: go test -json ./...", "junit-xml: python3 -m pytest -q --junitxml={results_file}", `data-testid="check-form"`)

		// Add a stack in the YAML; it is saved and shown.
		form := formValues(t, page.Body, "/rules")
		form.Set("stacks", form.Get("stacks")+"- name: elixir\n  detect:\n    - file: mix.exs\n  commands:\n    - activity: unit-test\n      command: mix test\n      tools: [mix-not-installed-here]\n")
		c.post("/rules", form).want(t, http.StatusSeeOther)
		saved, err := e.db.GetRules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(saved.Stacks); n != len(contract.DefaultStacks())+1 || saved.Stacks[n-1].Name != "elixir" || saved.Stacks[n-1].Commands[0].Command != "mix test" {
			t.Fatalf("saved stacks %+v", saved.Stacks)
		}
		page = c.get("/rules")
		page.want(t, http.StatusOK, `data-testid="stack-elixir"`, "<code>stacks.elixir</code>")

		// Errors beside the stacks field, every one named by its stack; nothing saved.
		bad := formValues(t, page.Body, "/rules")
		bad.Set("stacks", strings.Replace(strings.Replace(bad.Get("stacks"), "command: mix test", "command: ' '", 1), "- file: mix.exs", "- config: nose", 1))
		res := c.post("/rules", bad)
		res.want(t, http.StatusUnprocessableEntity, "Nothing was saved")
		assertFieldError(t, res.Body, "stacks", "elixir: commands[0].command: needs a command; elixir: detect[0].config: unknown")
		bad.Set("stacks", "- name: go\n  detcet: []\n")
		assertFieldError(t, c.post("/rules", bad).Body, "stacks", "not a YAML list of stacks")
		if again, _ := e.db.GetRules(ctx); len(again.Stacks) != len(saved.Stacks) || again.Stacks[len(again.Stacks)-1].Commands[0].Command != "mix test" {
			t.Fatal("a refused save changed the stacks")
		}

		// Check a workspace: a real directory, only read.
		dir := t.TempDir()
		for name, body := range map[string]string{"go.mod": "module m\n", "mix.exs": "defmodule M do end\n",
			"pyproject.toml": "[tool.pytest.ini_options]\n", "package.json": `{"scripts":{"lint":"eslint"}}`} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := len(mustEvents(t, e))
		res = c.post("/rules/stacks", url.Values{"path": {dir}})
		res.want(t, http.StatusOK, `data-testid="check-result"`, `data-testid="check-stack-go"`, `data-testid="check-stack-python"`,
			`data-testid="check-stack-elixir"`, "(go.mod found)", "(pytest configured in pyproject.toml)", "<code>python3 -m pytest -q</code>",
			"not on PATH: mix-not-installed-here", "left out: lint: ruff not configured", "package.json scripts: lint")
		if strings.Contains(res.Body, `data-testid="check-stack-node"`) {
			t.Fatal("a package.json without a test script matched node")
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 4 || len(mustEvents(t, e)) != before {
			t.Fatal("checking a workspace wrote something")
		}
		empty := t.TempDir()
		c.post("/rules/stacks", url.Values{"path": {empty}}).want(t, http.StatusOK, `data-testid="check-none"`)
		for path, msg := range map[string]string{"relative/dir": "must be an absolute path", filepath.Join(dir, "nope"): "no such directory",
			filepath.Join(dir, "go.mod"): "is not a directory", "": "is required"} {
			r := c.post("/rules/stacks", url.Values{"path": {path}})
			r.want(t, http.StatusUnprocessableEntity)
			assertFieldError(t, r.Body, "path", msg)
		}

		checkStacksRefusedToDev(t, e, dir)
	})
}

// checkStacksRefusedToDev checks that a developer sees the stacks but no check form,
// and is refused.
func checkStacksRefusedToDev(t *testing.T, e *admEnv, dir string) {
	t.Helper()
	// A developer sees the stacks but no check form, and is refused.
	dv := e.login("dev")
	dp := dv.get("/rules")
	dp.want(t, http.StatusOK, `data-testid="stack-go"`)
	if strings.Contains(dp.Body, `data-testid="check-form"`) {
		t.Fatal("a developer is offered the check form")
	}
	dv.post("/rules/stacks", url.Values{"path": {dir}}).want(t, http.StatusForbidden)
}
