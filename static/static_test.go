package static

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func TestFSHoldsAssets(t *testing.T) {
	for _, name := range []string{"app.css", "live.js", "editor.js", "a11y.css", "a11y.js"} {
		b, err := fs.ReadFile(FS, name)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v (%d bytes)", name, err, len(b))
		}
	}
}

func TestPathIsStableAndVersioned(t *testing.T) {
	p := Path("app.css")
	if !regexp.MustCompile(`^/static/app\.css\?v=[0-9a-f]{12}$`).MatchString(p) {
		t.Fatalf("Path(app.css) = %q", p)
	}
	if Path("app.css") != p || Path("/app.css") != p {
		t.Errorf("Path is not stable")
	}
	if Path("live.js") == strings.Replace(p, "app.css", "live.js", 1) {
		t.Errorf("different files share a hash")
	}
	if got := Path("missing.css"); got != "/static/missing.css" {
		t.Errorf("Path(missing) = %q", got)
	}
}

func TestHandlerCaching(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	get := func(path string) *http.Response {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	res := get(Path("app.css"))
	if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("versioned: %d %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/css") {
		t.Errorf("content type %q", res.Header.Get("Content-Type"))
	}
	res = get("/static/live.js?v=old")
	if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("stale version: %d %q", res.StatusCode, res.Header.Get("Cache-Control"))
	}
	if res := get("/static/"); res.StatusCode != 404 {
		t.Errorf("directory listing: %d", res.StatusCode)
	}
	if res := get("/static/nope.css"); res.StatusCode != 404 {
		t.Errorf("missing file: %d", res.StatusCode)
	}
}
