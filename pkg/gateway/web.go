package gateway

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// web holds the page: plain HTML, CSS and JavaScript modules with their
// fonts, served as they are (no build step).
//
//go:embed web
var web embed.FS

// isFile reports whether name is a file (not a directory) in root.
func isFile(root fs.FS, name string) bool {
	if !fs.ValidPath(name) {
		return false
	}
	fi, err := fs.Stat(root, name)
	return err == nil && !fi.IsDir()
}

// webHandler serves the page at / and its files under /assets/. Code and
// markup are revalidated on every load so an upgraded gateway is seen at
// once; fonts never change under a name and are cached.
func webHandler() http.Handler {
	root, err := fs.Sub(web, "web")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(root)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch {
		case r.URL.Path == "/" || r.URL.Path == "/index.html":
			w.Header().Set("Cache-Control", "no-cache")
		case strings.HasPrefix(r.URL.Path, "/assets/fonts/"):
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		case strings.HasPrefix(r.URL.Path, "/assets/"):
			w.Header().Set("Cache-Control", "no-cache")
		default:
			http.NotFound(w, r)
			return
		}
		if r.URL.Path != "/" && !isFile(root, strings.TrimPrefix(r.URL.Path, "/")) {
			// Not a listing of the embedded tree, and not a 500 for a name
			// that is no file's (invalid UTF-8, "..").
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		files.ServeHTTP(w, r)
	})
}
