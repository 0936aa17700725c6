package fileparts

import (
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/models/formats/glob"
)

const basePackageJSON = `{
  "name": "calc",
  "version": "1.0.0",
  "scripts": {
    "test": "node --test",
    "lint": "eslint ."
  },
  "dependencies": {
    "left-pad": "^1.3.0"
  }
}
`

type restoreCase struct {
	name    string
	file    string
	part    string
	names   []string
	base    string
	noBase  bool
	worker  string
	deleted bool
	want    string // judged; "" with wantNil means absent
	wantNil bool
	changed []string
}

func runRestoreCases(t *testing.T, cases []restoreCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var base, worker []byte
			if !c.noBase {
				base = []byte(c.base)
			}
			if !c.deleted {
				worker = []byte(c.worker)
			}
			got, changed, err := Restore(c.file, c.part, base, worker, c.names)
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if c.wantNil {
				if got != nil {
					t.Fatalf("judged = %q, want no file", got)
				}
			} else if string(got) != c.want {
				t.Errorf("judged:\n%s\nwant:\n%s\n(%q)", got, c.want, got)
			}
			if !reflect.DeepEqual(changed, c.changed) {
				t.Errorf("changed = %q, want %q", changed, c.changed)
			}
			if (len(changed) == 0) != (string(got) == string(worker) && (got == nil) == (worker == nil)) {
				t.Errorf("changed %q but judged == worker is %v", changed, string(got) == string(worker))
			}
			// Judging the judged file again changes nothing.
			again, ch2, err := Restore(c.file, c.part, base, got, c.names)
			if err != nil || len(ch2) != 0 || string(again) != string(got) {
				t.Errorf("second Restore: changed %q, err %v, judged:\n%s", ch2, err, again)
			}
		})
	}
}

func TestRestorePackageJSON(t *testing.T) {
	test := ScriptsRun([]string{"npm test"})
	runRestoreCases(t, []restoreCase{
		{
			name: "test script weakened, dependency added", file: "package.json", part: "scripts", names: test,
			base: basePackageJSON,
			worker: `{
  "name": "calc",
  "version": "1.0.0",
  "scripts": {
    "test": "exit 0",
    "lint": "eslint ."
  },
  "dependencies": {
    "left-pad": "^1.3.0",
    "lodash": "^4.17.21"
  }
}
`,
			want: `{
  "name": "calc",
  "version": "1.0.0",
  "scripts": {
    "test": "node --test",
    "lint": "eslint ."
  },
  "dependencies": {
    "left-pad": "^1.3.0",
    "lodash": "^4.17.21"
  }
}
`,
			changed: []string{"scripts.test"},
		},
		{
			name: "pretest added runs before test", file: "package.json", part: "scripts", names: test,
			base: basePackageJSON,
			worker: `{
  "name": "calc",
  "version": "1.0.0",
  "scripts": {
    "pretest": "rm -rf test",
    "test": "node --test",
    "lint": "eslint ."
  },
  "dependencies": {
    "left-pad": "^1.3.0"
  }
}
`,
			want:    basePackageJSON,
			changed: []string{"scripts.pretest"},
		},
		{
			name: "posttest added as last member", file: "package.json", part: "scripts", names: test,
			base:    `{"scripts": {"test": "node --test"}}`,
			worker:  `{"scripts": {"test": "node --test", "posttest": "cp fake.xml results.xml"}}`,
			want:    `{"scripts": {"test": "node --test"}}`,
			changed: []string{"scripts.posttest"},
		},
		{
			name: "fair edits: dependency added, lint changed", file: "package.json", part: "scripts", names: test,
			base: basePackageJSON,
			worker: `{
  "name": "calc",
  "version": "1.0.0",
  "scripts": {
    "test": "node --test",
    "lint": "eslint --fix ."
  },
  "dependencies": {
    "left-pad": "^1.3.0",
    "lodash": "^4.17.21"
  }
}
`,
			want: `{
  "name": "calc",
  "version": "1.0.0",
  "scripts": {
    "test": "node --test",
    "lint": "eslint --fix ."
  },
  "dependencies": {
    "left-pad": "^1.3.0",
    "lodash": "^4.17.21"
  }
}
`,
		},
		{
			name: "same script spelled with escapes is no change", file: "package.json", part: "scripts", names: test,
			base:   `{"scripts": {"test": "node --test"}}`,
			worker: `{"scripts":{"test":"node\u0020--test"},"private":true}`,
			want:   `{"scripts":{"test":"node\u0020--test"},"private":true}`,
		},
		{
			name: "test script deleted is put back", file: "package.json", part: "scripts", names: test,
			base: basePackageJSON,
			worker: `{
  "name": "calc",
  "version": "1.0.0",
  "scripts": {
    "lint": "eslint ."
  }
}
`,
			want: `{
  "name": "calc",
  "version": "1.0.0",
  "scripts": {
    "lint": "eslint .",
    "test": "node --test"
  }
}
`,
			changed: []string{"scripts.test"},
		},
		{
			name: "scripts member deleted is put back with the protected scripts only", file: "package.json", part: "scripts", names: test,
			base: basePackageJSON,
			worker: `{
  "name": "calc",
  "version": "1.0.0"
}
`,
			want: `{
  "name": "calc",
  "version": "1.0.0",
  "scripts": {
    "test": "node --test"
  }
}
`,
			changed: []string{"scripts.test"},
		},
		{
			name: "duplicate test key: the last wins for npm, so both go", file: "package.json", part: "scripts", names: test,
			base:    `{"scripts": {"test": "node --test"}}`,
			worker:  `{"scripts": {"test": "node --test", "test": "exit 0"}}`,
			want:    `{"scripts": {"test": "node --test"}}`,
			changed: []string{"scripts.test"},
		},
		{
			name: "duplicate scripts member: only the last survives", file: "package.json", part: "scripts", names: test,
			base:    `{"scripts": {"test": "node --test"}}`,
			worker:  `{"scripts": {"test": "node --test"}, "scripts": {"test": "exit 0", "build": "tsc"}}`,
			want:    `{"scripts": {"test": "node --test", "build": "tsc"}}`,
			changed: []string{"scripts", "scripts.test"},
		},
		{
			name: "scripts the test script runs are protected", file: "package.json", part: "scripts", names: test,
			base:    `{"scripts": {"build": "tsc", "test": "npm run build && node --test", "lint": "eslint ."}}`,
			worker:  `{"scripts": {"build": "exit 0", "test": "npm run build && node --test", "lint": "true"}}`,
			want:    `{"scripts": {"build": "tsc", "test": "npm run build && node --test", "lint": "true"}}`,
			changed: []string{"scripts.build"},
		},
		{
			name: "npm-run-all globs match the worker's new scripts too", file: "package.json", part: "scripts", names: test,
			base:    `{"scripts": {"test": "run-s test:*", "test:unit": "node --test"}}`,
			worker:  `{"scripts": {"test": "run-s test:*", "test:unit": "node --test", "test:zz": "rm -rf test"}}`,
			want:    `{"scripts": {"test": "run-s test:*", "test:unit": "node --test"}}`,
			changed: []string{"scripts.test:zz"},
		},
		{
			name: "worker file not JSON: the base's whole file", file: "package.json", part: "scripts", names: test,
			base:    basePackageJSON,
			worker:  `{"scripts": {"test": "exit 0"},}`,
			want:    basePackageJSON,
			changed: []string{WholeFile},
		},
		{
			name: "worker deleted package.json", file: "package.json", part: "scripts", names: test,
			base: basePackageJSON, deleted: true,
			want:    basePackageJSON,
			changed: []string{WholeFile, "scripts.test"},
		},
		{
			name: "no package.json at base: the worker's test script goes", file: "package.json", part: "scripts", names: test,
			noBase:  true,
			worker:  `{"name": "x", "scripts": {"test": "exit 0", "build": "tsc"}}`,
			want:    `{"name": "x", "scripts": {"build": "tsc"}}`,
			changed: []string{"scripts.test"},
		},
		{
			name: "a top-level member part", file: "package.json", part: ".jest", names: nil,
			base:    `{"name": "x", "jest": {"testMatch": ["**/*.test.js"]}}`,
			worker:  `{"name": "y", "jest": {"testPathIgnorePatterns": ["."]}}`,
			want:    `{"name": "y", "jest": {"testMatch": ["**/*.test.js"]}}`,
			changed: []string{"jest"},
		},
		{
			name: "byte order mark and tabs are kept", file: "package.json", part: "scripts", names: test,
			base:    "\uFEFF{\n\t\"scripts\": {\n\t\t\"test\": \"node --test\"\n\t}\n}\n",
			worker:  "\uFEFF{\n\t\"scripts\": {\n\t\t\"test\": \"true\"\n\t},\n\t\"type\": \"module\"\n}\n",
			want:    "\uFEFF{\n\t\"scripts\": {\n\t\t\"test\": \"node --test\"\n\t},\n\t\"type\": \"module\"\n}\n",
			changed: []string{"scripts.test"},
		},
	})
}

func TestRestorePackageJSONBaseNotJSON(t *testing.T) {
	_, _, err := Restore("package.json", "scripts", []byte("{"), []byte("{}"), []string{"test"})
	if err == nil {
		t.Fatal("want an error for a base that is not JSON")
	}
	_, _, err = Restore("package.json", "scripts", []byte("[1]"), []byte("{}"), []string{"test"})
	if err == nil {
		t.Fatal("want an error for a base that is not a JSON object")
	}
}

func TestScriptsRun(t *testing.T) {
	hooks := func(names ...string) []string {
		set := map[string]bool{}
		for _, n := range names {
			set[n], set["pre"+n], set["post"+n] = true, true, true
		}
		return setList(set)
	}
	for _, c := range []struct {
		cmds []string
		want []string
	}{
		{[]string{"npm test"}, hooks("test")},
		{[]string{"npm t -- --reporter=tap"}, hooks("test")},
		{[]string{"npm run lint"}, hooks("lint")},
		{[]string{"npm --silent run-script typecheck"}, hooks("typecheck")},
		{[]string{"npm --prefix web test"}, hooks("test")},
		{[]string{"npm --loglevel silent test"}, hooks("test")},
		{[]string{"pnpm test", "pnpm run lint", "pnpm typecheck"}, hooks("lint", "test", "typecheck")},
		{[]string{"yarn test --reporter=tap", "yarn run lint"}, hooks("lint", "test")},
		{[]string{"yarn lint"}, hooks("lint")},
		{[]string{"npm ci && npm test"}, hooks("dependencies", "install", "prepare", "prepublish", "test")},
		{[]string{"CI=1 npm test; npm run build || exit 1"}, hooks("build", "test")},
		{[]string{`sh -c "npm run lint && npm test"`}, hooks("lint", "test")},
		{[]string{"timeout 600 npx cross-env NODE_ENV=test npm test"}, hooks("test")},
		{[]string{"npx run-s build test:*"}, hooks("build", "test:*")},
		{[]string{`concurrently "npm:lint" "npm:test:*"`}, hooks("lint", "test:*")},
		{[]string{"go test ./...", "echo npm test is not run"}, []string{}},
	} {
		got := ScriptsRun(c.cmds)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ScriptsRun(%q) = %q, want %q", c.cmds, got, c.want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pat, name string
		want      bool
	}{
		{"lint:*", "lint:js", true}, {"lint:*", "lint", false}, {"*", "x", true},
		{"a*b*c", "aXbYc", true}, {"a*b*c", "aXc", false}, {"test", "test", true},
	} {
		if got := glob.MatchTask(c.pat, c.name); got != c.want {
			t.Errorf("glob.MatchTask(%q, %q) = %v", c.pat, c.name, got)
		}
	}
	if strings.Contains("x", "*") {
		t.Fatal()
	}
}
