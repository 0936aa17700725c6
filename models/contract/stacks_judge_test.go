package contract

import (
	"os"
	"strings"
	"testing"
)

// judgeDocBegin is the doc's marker as written there (it predates the move of the
// stacks to models/contract); change both together.
const (
	judgeDocPath  = "../../docs/judge-environment.md"
	judgeDocBegin = "<!-- generated from models.JudgeEnvDoc(models.DefaultStacks()); UPDATE_DOCS=1 go test -run TestJudgeEnvDoc ./models/ -->\n"
	judgeDocEnd   = "<!-- end generated -->"
)

// TestJudgeEnvDocIsCurrent: docs/judge-environment.md lists, per default stack, the
// judge's variables and the configuration sources they switch off, exactly as the
// default rules hold them. UPDATE_DOCS=1 rewrites the generated part.
func TestJudgeEnvDocIsCurrent(t *testing.T) {
	b, err := os.ReadFile(judgeDocPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	head, rest, ok := strings.Cut(doc, judgeDocBegin)
	_, tail, ok2 := strings.Cut(rest, judgeDocEnd)
	if !ok || !ok2 {
		t.Fatalf("%s has no generated part between %q and %q", judgeDocPath, judgeDocBegin, judgeDocEnd)
	}
	want := head + judgeDocBegin + "\n" + JudgeEnvDoc(DefaultStacks()) + judgeDocEnd + tail
	if doc == want {
		return
	}
	if os.Getenv("UPDATE_DOCS") == "1" {
		if err := os.WriteFile(judgeDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with the default stacks; run UPDATE_DOCS=1 go test -run TestJudgeEnvDoc ./models/contract/", judgeDocPath)
}

// TestDefaultStacksSwitchOffTheirConfiguration: every default stack documents its
// configuration sources, and the judge variables the hostile tests rely on are set.
func TestDefaultStacksSwitchOffTheirConfiguration(t *testing.T) {
	want := map[string][]string{
		"go":     {"GOENV=off", "GOTOOLCHAIN=local", "GOPROXY=off", "GOCACHE=" + JudgeGoCache, "GOMODCACHE=" + JudgeGoModCache},
		"node":   {"NPM_CONFIG_USERCONFIG=" + JudgeEtc + "/npmrc", "NPM_CONFIG_GLOBALCONFIG=" + JudgeEtc + "/npmrc-global", "npm_config_script_shell=/bin/sh"},
		"python": {"PYTHONNOUSERSITE=1", "PYTHONSAFEPATH=1"},
		"rust":   {"CARGO_HOME=" + JudgeHome + "/.cargo"},
		"make":   nil,
	}
	for _, st := range DefaultStacks() {
		w, ok := want[st.Name]
		if !ok {
			continue
		}
		delete(want, st.Name)
		if len(st.ConfigSources) == 0 {
			t.Errorf("stack %s documents no configuration sources", st.Name)
		}
		for _, kv := range w {
			found := false
			for _, got := range st.JudgeEnv {
				found = found || got == kv
			}
			if !found {
				t.Errorf("stack %s: JudgeEnv %q lacks %s", st.Name, st.JudgeEnv, kv)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("default stacks missing: %v", want)
	}
}
