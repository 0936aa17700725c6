package procs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOwnerDead: a registry's owner lock proves it alive while it holds it, and dead
// once its process drops the lock without removing the file (as a kill -9 does); a
// file that is gone (a closed registry) or a name this package never writes proves
// nothing.
func TestOwnerDead(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := r.OwnerPath()
	if !filepath.IsAbs(path) || filepath.Dir(path) != dir {
		t.Fatalf("owner path %q", path)
	}
	check := func(what, path string, want bool) {
		t.Helper()
		got, err := OwnerDead(path)
		if err != nil || got != want {
			t.Errorf("%s: OwnerDead = %v, %v; want %v", what, got, err, want)
		}
	}
	check("live registry", path, false)
	// Its process dies: the kernel drops the lock, the file stays.
	if err := r.owner.f.Close(); err != nil {
		t.Fatal(err)
	}
	check("dead registry", path, true)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	check("removed file", path, false)
	other := filepath.Join(dir, "not-an-owner")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	check("another file", other, false)
	check("relative path", filepath.Base(path), false)
}
