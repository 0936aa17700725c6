// Package attesttest finds the real cosign for the attestation tests and runs
// `cosign verify-blob-attestation` with the flags docs/attestations.md gives strangers.
package attesttest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/countersign/countersign/runner/attest"
)

// Cosign returns the cosign binary: COUNTERSIGN_COSIGN_BIN (what .ci/run installs),
// else cosign on PATH. Without one the test fails under CI=true and is skipped
// otherwise.
func Cosign(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("COUNTERSIGN_COSIGN_BIN")
	if bin == "" {
		bin, _ = exec.LookPath("cosign")
	}
	if bin != "" {
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("cosign is required under CI=true: set COUNTERSIGN_COSIGN_BIN (.ci/run installs it) or put cosign on PATH")
	}
	t.Skip("cosign not found: set COUNTERSIGN_COSIGN_BIN or put cosign on PATH")
	return ""
}

// VerifyBlobAttestation runs cosign verify-blob-attestation on the envelope file with
// the public key file; subject is extra arguments naming the subject (a blob path, or
// --digest D --digestAlg gitCommit). The attestation is in no transparency log: the
// check is of the key's signature, so the tlog is ignored. It returns cosign's output
// and whether it verified.
func VerifyBlobAttestation(t testing.TB, cosign, key, envelope string, subject ...string) (string, bool) {
	t.Helper()
	args := append([]string{"verify-blob-attestation", "--key", key, "--signature", envelope,
		"--type", attest.PredicateType, "--insecure-ignore-tlog=true"}, subject...)
	cmd := exec.Command(cosign, args...)
	cmd.Env = append(os.Environ(), "SIGSTORE_NO_CACHE=true", "TUF_ROOT="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}
