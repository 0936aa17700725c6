package fileparts

import (
	"strings"
	"testing"
)

// FuzzFilesRun: any commands and any base files end, never panic, and give only
// anchored globs inside the workspace.
func FuzzFilesRun(f *testing.F) {
	f.Add("make test", "test:\n\t./a.sh\n", "./a.sh; . ./a.sh; bash -c \"$(./a.sh)\"")
	f.Add("npm test", `{"scripts":{"test":"sh x.sh && run-s a b","a":"node a.js"}}`, "cd .. && ./x; eval \"$X\"")
	f.Add("sh <<E\n./q\nE", "include $(X)\n", "${a:-./b} $((1+2)) <(./c) `./d`")
	f.Fuzz(func(t *testing.T, cmd, file, script string) {
		base := map[string]string{"Makefile": file, "package.json": file, "a.sh": script, "x.sh": script, "x": script}
		for _, g := range FilesRun([]string{cmd}, fsOf(base)) {
			if !strings.HasPrefix(g, "/") || strings.HasPrefix(g, "/../") || g == "/.." || strings.HasPrefix(g, "//") {
				t.Fatalf("glob %q outside the workspace", g)
			}
		}
	})
}
