// Package console is the operator's web console: plain HTML, CSS and
// JavaScript embedded in the binary (no build step), served under /console/.
// The pages call the admin API from the browser with the admin token the
// operator typed into the sign-in form; the server side holds no session and
// serves only static files, so it needs no authentication of its own.
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

// Prefix is where the console is mounted.
const Prefix = "/console/"

//go:embed assets
var assets embed.FS

// Handler serves the console's files under Prefix. Every response forbids
// framing and inline script sources other than the console's own files, so
// a token kept in the page's sessionStorage is not exposed to another origin.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		// The embedded tree is fixed at build time; a missing directory is a
		// broken build, not a runtime condition.
		panic(err)
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
