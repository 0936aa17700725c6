package judge

import (
	"slices"
	"strings"
	"testing"
)

func wantDeps(t *testing.T, name string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n got %q\nwant %q", name, got, want)
	}
}

// TestChangedDependencies: each manifest kind names the dependencies that changed,
// added or removed, and marks those that now resolve to a path in the workspace.
func TestChangedDependencies(t *testing.T) {
	wantDeps(t, "package.json", ChangedDependencies("package.json",
		[]byte(`{"name":"a","dependencies":{"lodash":"^4.17.20"},"devDependencies":{"chai":"^4.3.0","mocha":"^10"}}`),
		[]byte(`{"name":"a","dependencies":{"lodash":"^4.17.21","left-pad":"1.3.0"},"devDependencies":{"chai":"file:../fake-chai"},"scripts":{"x":"y"}}`)),
		[]string{
			"package.json: devDependencies chai ^4.3.0 -> file:../fake-chai" + LocalPath,
			"package.json: devDependencies mocha removed",
			"package.json: left-pad added 1.3.0",
			"package.json: lodash ^4.17.20 -> ^4.17.21",
		})
	wantDeps(t, "package-lock.json", ChangedDependencies("package-lock.json",
		[]byte(`{"lockfileVersion":3,"packages":{"":{"name":"a"},"node_modules/chai":{"version":"4.3.10","resolved":"https://registry.npmjs.org/chai/-/chai-4.3.10.tgz"}}}`),
		[]byte(`{"lockfileVersion":3,"packages":{"":{"name":"a"},"node_modules/chai":{"resolved":"fake-chai","link":true}}}`)),
		[]string{"package-lock.json: node_modules/chai 4.3.10 -> (link) fake-chai" + LocalPath})
	wantDeps(t, "go.mod", ChangedDependencies("go.mod",
		[]byte("module m\n\ngo 1.22\n\nrequire github.com/stretchr/testify v1.9.0\n"),
		[]byte("module m\n\ngo 1.22\n\nrequire (\n\tgithub.com/stretchr/testify v1.9.0\n\tgolang.org/x/text v0.14.0\n)\n\nreplace github.com/stretchr/testify => ./fake\n")),
		[]string{
			"go.mod: golang.org/x/text added v0.14.0",
			"go.mod: replace github.com/stretchr/testify added => ./fake" + LocalPath,
		})
	wantDeps(t, "requirements.txt", ChangedDependencies("requirements.txt",
		[]byte("# pinned\nrequests==2.31.0\nPyYAML>=6 ; python_version > '3'\nsix\n"),
		[]byte("requests==2.32.0  # newer\npyyaml>=6 ; python_version > '3'\n-e ./fake_pytest\nattrs @ file:///tmp/attrs\n")),
		[]string{
			"requirements.txt: -e ./fake_pytest added -e ./fake_pytest" + LocalPath,
			"requirements.txt: attrs added @ file:///tmp/attrs" + LocalPath,
			"requirements.txt: requests ==2.31.0 -> ==2.32.0",
			"requirements.txt: six removed",
		})
	wantDeps(t, "unchanged", ChangedDependencies("go.mod", []byte("module m\n"), []byte("module m\n")), nil)
	wantDeps(t, "other", ChangedDependencies("yarn.lock", []byte("a"), []byte("b")), []string{"yarn.lock changed"})
	wantDeps(t, "unreadable", ChangedDependencies("package.json", []byte(`{}`), []byte(`{`)),
		[]string{"package.json changed (not readable as package.json)"})
	if got := ChangedDependencies("sub/package.json", nil, []byte(`{"dependencies":{"x":"1"}}`)); !slices.Equal(got, []string{"sub/package.json: x added 1"}) {
		t.Errorf("a new package.json: %q", got)
	}
}
