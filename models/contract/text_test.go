package contract

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateKeepsUTF8(t *testing.T) {
	s := strings.Repeat("é", 200) // two bytes each
	for n := 1; n < 60; n++ {
		got := Truncate(s, n)
		if len(got) > n && n >= len("…") {
			t.Fatalf("Truncate(_, %d) is %d bytes", n, len(got))
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Truncate(_, %d) = %q is not valid UTF-8", n, got)
		}
	}
	if Truncate("short", 10) != "short" {
		t.Fatal("a short string changed")
	}
}
