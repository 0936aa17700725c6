//go:build linux && (amd64 || arm64)

package runner

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/models"
	"github.com/countersign/countersign/runner/sandbox"
)

// realCLI returns the absolute path of the pinned CLI the environment variable env
// names (.ci/run installs it and exports env): it skips the test when none is named
// outside CI, and fails in CI.
func realCLI(t *testing.T, env, what string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s must name the %s in CI (.ci/run installs it)", env, what)
		}
		t.Skipf("%s is not set: no %s to run", env, what)
	}
	abs, err := filepath.Abs(bin)
	must(t, err)
	if fi, err := os.Stat(abs); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file: %v", env, bin, err)
	}
	return abs
}

// readySandbox returns a working sandbox: it skips the test when there is none
// outside CI, and fails in CI.
func readySandbox(t *testing.T) *sandbox.Sandbox {
	t.Helper()
	sb := sandbox.Probe(sandbox.ModeOn)
	if !sb.Ready() {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the sandbox must work in CI: %s", sb.Status())
		}
		t.Skipf("the sandbox does not work here: %s", sb.Status())
	}
	return sb
}

// npmInstall is the node_modules directory an npm-installed CLI's bin lies in: the
// confined worker must read all of it (the package, its dependencies, a native
// binary in a platform package).
func npmInstall(t *testing.T, bin string) string {
	t.Helper()
	real := mustEval(t, bin)
	for dir := filepath.Dir(real); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if filepath.Base(dir) == "node_modules" {
			return dir
		}
	}
	t.Fatalf("%s (%s) is not in a node_modules directory", bin, real)
	return ""
}

// passEnv sets the variables for the test and returns their names, for an agent's
// PassEnv: the runner passes them by name, never storing a value.
func passEnv(t *testing.T, vars map[string]string) []string {
	var names []string
	for k, v := range vars {
		t.Setenv(k, v)
		names = append(names, k)
	}
	return names
}

// confinedAgent is a mutation giving an agent the variables names, the port of a
// scripted API and the install directories to read.
func confinedAgent(names []string, port int, read ...string) func(*models.Agent) {
	return func(a *models.Agent) {
		a.PassEnv = names
		a.Sandbox = models.AgentSandbox{Connect: []int{port}, Read: read}
	}
}

// filesHolding returns the files under root whose content holds secret: a key the
// worker had in its environment must not be written anywhere the runner keeps (the
// workspace, the agent's home, the attempt's log and temp files, the database).
func filesHolding(t *testing.T, root, secret string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // a temp file removed while walking
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil // released while walking
		}
		if bytes.Contains(b, []byte(secret)) {
			found = append(found, p)
		}
		return nil
	})
	must(t, err)
	return found
}
