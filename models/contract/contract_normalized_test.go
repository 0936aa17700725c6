package contract

import "testing"

// TestCompletionNormalized: a completion's Normalized is Contract.Normalized's
// completion (type inferred from the path, the defaults filled) and leaves its
// receiver, and the receiver's verify list, untouched.
func TestCompletionNormalized(t *testing.T) {
	cp := Completion{Path: " out.md ", Verify: []string{" make test "}}
	n := cp.Normalized()
	if n.Type != CompletionFile || n.Path != "out.md" || n.MaxAttempts != DefaultMaxAttempts ||
		n.Timeout.Duration != DefaultTimeout || n.VerifyTimeout.Duration != DefaultVerifyTimeout || n.Verify[0] != "make test" {
		t.Errorf("Normalized() = %+v", n)
	}
	if cp.Type != "" || cp.Path != " out.md " || cp.Verify[0] != " make test " || cp.MaxAttempts != 0 {
		t.Errorf("Normalized changed its receiver: %+v", cp)
	}
	if sig := (Completion{Type: CompletionSignal}).Normalized(); sig.Path != DefaultSignalOutputPath {
		t.Errorf("a signal completion's default path = %q, want %q", sig.Path, DefaultSignalOutputPath)
	}
}
