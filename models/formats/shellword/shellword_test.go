package shellword

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// wordCases are argument lists on which the three former splitters (the judge's,
// the readiness check's and the worker's) read different words or disagreed on
// whether they could read them: backslashes outside and inside double quotes, a
// '#' inside a word, quotes glued to plain text, blanks in quotes, tabs.
var wordCases = []string{
	`a\ b c`,
	`"a\"b" c`,
	`'x'"y"z`,
	`echo a#b`,
	`"a b"c d`,
	"cat\t-n  x",
	`it\'s ok`,
	`"back\\slash" 'single \ kept'`,
	`--model="opus 4" -p 'say "hi"'`,
	`a\
b`,
}

// TestWordsAgreeWithBash: bash's words for each case (printf of "$@" with the
// case as arguments) are what Simple reads, what Split reads as its first
// command, and what Plain reads whenever it accepts the case.
func TestWordsAgreeWithBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	for _, c := range wordCases {
		out, err := exec.Command("bash", "--norc", "--noprofile", "-c", `printf '%s\0' `+c).Output()
		if err != nil {
			t.Fatalf("bash on %q: %v", c, err)
		}
		want := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		cmds, _, ok := Simple(c)
		if !ok || len(cmds) != 1 || !slices.Equal(texts(cmds[0]), want) {
			t.Errorf("Simple(%q) = %+v (ok %v), bash reads %q", c, cmds, ok, want)
		}
		if split := Split(c, false); len(split) == 0 || !slices.Equal(split[0], want) {
			t.Errorf("Split(%q) = %q, bash reads %q", c, split, want)
		}
		if words, ok := Plain(c); ok && !slices.Equal(texts(words), want) {
			t.Errorf("Plain(%q) = %q, bash reads %q", c, texts(words), want)
		}
	}
}

func texts(ws []Word) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Text)
	}
	return out
}

// TestPlainRedirections: the redirections Plain passes on are the ones written
// as one word, in the order written.
func TestPlainRedirections(t *testing.T) {
	words, ok := Plain("cat 2>&1 x >/dev/null")
	got := []string{}
	for _, w := range words {
		got = append(got, w.Text)
	}
	if !ok || !slices.Equal(got, []string{"cat", "2>&1", "x", ">/dev/null"}) {
		t.Errorf("Plain = %q, %v", got, ok)
	}
	for _, c := range []string{"cat > /dev/null", "cat # c", "cat; rm x", "X=1 cat", "cat *.go", "cat $(x)", "cat <in"} {
		if _, ok := Plain(c); ok {
			t.Errorf("Plain(%q) accepted", c)
		}
	}
}
