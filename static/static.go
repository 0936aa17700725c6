// Package static holds the dashboard's stylesheet and its small scripts, embedded in
// the binary so that a deployment is a single file.
//
// Assets are referenced through Path, which appends a short content hash as a query
// string; Handler serves such versioned URLs with a one-year immutable cache lifetime,
// so browsers never ask twice for the same bytes and always see a new build at once.
package static

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strings"
	"sync"
)

// Prefix is the URL path under which Handler expects to be mounted.
const Prefix = "/static/"

// FS holds the embedded assets: app.css, live.js, time.js (relative times that tick,
// local times on hover), editor.js (the template editor), shortcuts.js (keyboard
// shortcuts, filters that apply on change), confirm.js (data-confirm), a11y.css and
// a11y.js (accessibility and small screens).
//
//go:embed app.css live.js time.js editor.js shortcuts.js confirm.js a11y.css a11y.js
var FS embed.FS

var (
	hashOnce sync.Once
	hashes   map[string]string // file name → short content hash
)

// hashLen is the number of hex digits of the SHA-256 kept in a versioned URL; 12 is
// ample to tell builds apart and keeps URLs short.
const hashLen = 12

func loadHashes() {
	hashes = map[string]string{}
	_ = fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := FS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		hashes[p] = hex.EncodeToString(sum[:])[:hashLen]
		return nil
	})
}

// Hash returns the short content hash of the embedded file name, or "" when there is
// no such file. It is stable for a given build and changes whenever the bytes change.
func Hash(name string) string {
	hashOnce.Do(loadHashes)
	return hashes[strings.TrimPrefix(name, "/")]
}

// Path returns the URL of the embedded file name ("app.css") with its content hash as
// a cache-busting version: "/static/app.css?v=<hash>". A name that is not embedded
// gets a plain, unversioned URL so that a typo shows up as a 404 rather than a panic.
func Path(name string) string {
	name = strings.TrimPrefix(name, "/")
	if h := Hash(name); h != "" {
		return Prefix + name + "?v=" + h
	}
	return Prefix + name
}

// Handler serves the embedded files for requests under Prefix ("/static/app.css").
// A request whose v parameter matches the file's current hash is cacheable forever
// (Cache-Control: public, max-age=31536000, immutable); any other request must be
// revalidated, so a stale or missing version can never pin old bytes in a browser.
func Handler() http.Handler {
	files := http.FileServerFS(FS)
	return http.StripPrefix(strings.TrimSuffix(Prefix, "/"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/")
		h := Hash(name)
		if h == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r) // no directory listings
			return
		}
		if r.URL.Query().Get("v") == h {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	}))
}
