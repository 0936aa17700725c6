package models_test

import (
	"slices"
	"testing"

	"github.com/countersign/countersign/models"
)

// TestCommandPrograms: the programs a command line needs from PATH, and nothing a
// shell provides itself or that cannot be known before it runs.
func TestCommandPrograms(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"go test ./...", []string{"go"}},
		{"no-such-tool-xyz --check", []string{"no-such-tool-xyz"}},
		{"GOFLAGS=-count=1 CGO_ENABLED=0 go test ./...", []string{"go"}},
		{`FOO="a b" npm test`, []string{"npm"}},
		{"go vet ./... && test -z \"$(gofmt -l .)\"", []string{"go"}},
		{"cd web && npm ci && npm test 2>&1 | tee ../npm.log", []string{"npm", "tee"}},
		{"if [ -f go.mod ]; then go test ./...; else pytest -q; fi", []string{"go", "pytest"}},
		{"for f in *.md; do markdownlint \"$f\"; done", []string{"markdownlint"}},
		{"(cd sub; make test)", []string{"make"}},
		{"env -i -u HOME PATH=/usr/bin ruff check .", []string{"ruff"}},
		{"exec nohup time cargo test", []string{"cargo"}},
		{"! grep -q TODO README.md", []string{"grep"}},
		{"/usr/bin/env python3 -m pytest", []string{"/usr/bin/env"}},
		{"./gradlew test", nil},
		{"$GO test ./...", nil},
		{`"$SHELL" -c true`, nil},
		{"~/bin/tool", nil},
		{"true", nil},
		{"exit 4", nil},
		{"test -f missing.txt", nil},
		{": nothing", nil},
		{"echo hi > out.txt # a comment naming nosuchtool", nil},
		{"f() { helper-xyz; }; f", []string{"helper-xyz"}},
		{"function g { go test; }; g", []string{"go"}},
		{"make test 2>/dev/null >>log <input", []string{"make"}},
		{"'quoted tool' --flag", []string{"quoted tool"}},
		{"go test ./... \\\n  -run X", []string{"go"}},
		{"case $x in a) foo ;; esac", []string{"foo"}},
		{"", nil},
	} {
		if got := models.CommandPrograms(tc.cmd); !slices.Equal(got, tc.want) {
			t.Errorf("CommandPrograms(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}
