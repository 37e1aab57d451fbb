// Package console is the operator's web console: plain HTML, CSS and
// JavaScript embedded in the binary (no build step), served under /console/.
// The pages call the admin API from the browser with the admin token the
// operator typed into the sign-in form, or (deployed) with the ID token the
// identity provider issued after a PKCE sign-in in the page; the server side
// holds no session and serves only static files and the sign-in settings,
// so it needs no authentication of its own.
package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Prefix is where the console is mounted.
const Prefix = "/console/"

//go:embed assets
var assets embed.FS

// SignIn is how the console signs an operator in. Empty (local mode): the
// operator pastes the admin token. With an identity provider (the
// deployed stack's Cognito user pool), the page runs the OAuth 2.0
// authorization code grant with PKCE (RFC 7636, S256) as a public client:
// it sends the browser to AuthorizeURL, trades the code for tokens at
// TokenURL with the verifier only the tab knows, and sends the ID token to
// the admin API, whose JWT authorizer accepts ClientID as an audience.
type SignIn struct {
	AuthorizeURL string `json:"authorize_url,omitempty"`
	TokenURL     string `json:"token_url,omitempty"`
	ClientID     string `json:"client_id,omitempty"`
	// Scopes default to openid email profile.
	Scopes []string `json:"scopes,omitempty"`
	// StreamURL, when set, is where the page opens the admin API's
	// streams instead of the API's own origin: on AWS the stream
	// function's URL, since API Gateway cannot stream (infra/streams.go).
	// It is independent of the sign-in mode.
	StreamURL string `json:"stream_url,omitempty"`
}

// The environment the api function reads SignIn from on AWS (infra/console.go
// sets it).
const (
	EnvAuthorizeURL = "MAASFLOW_CONSOLE_AUTHORIZE_URL"
	EnvTokenURL     = "MAASFLOW_CONSOLE_TOKEN_URL"
	EnvClientID     = "MAASFLOW_CONSOLE_CLIENT_ID"
	// EnvStreamURL is SignIn.StreamURL, optional.
	EnvStreamURL = "MAASFLOW_CONSOLE_STREAM_URL"
)

// SignInFromEnv reads SignIn from the environment; all three variables or
// none (then the token form).
func SignInFromEnv(lookup func(string) (string, bool)) (SignIn, error) {
	var si SignIn
	var missing []string
	for _, v := range []struct {
		name string
		to   *string
	}{{EnvAuthorizeURL, &si.AuthorizeURL}, {EnvTokenURL, &si.TokenURL}, {EnvClientID, &si.ClientID}} {
		val, _ := lookup(v.name)
		*v.to = strings.TrimSpace(val)
		if *v.to == "" {
			missing = append(missing, v.name)
		}
	}
	stream, _ := lookup(EnvStreamURL)
	stream = strings.TrimSpace(stream)
	switch len(missing) {
	case 0:
		si.StreamURL = stream
		return si, si.check()
	case 3:
		return SignIn{StreamURL: stream}, checkURL("stream URL", stream)
	}
	return SignIn{}, fmt.Errorf("console sign-in: %s must be set with the others", strings.Join(missing, ", "))
}

func (si SignIn) enabled() bool { return si.ClientID != "" }

// check requires absolute https URLs (http only on loopback, for tests).
func (si SignIn) check() error {
	for name, raw := range map[string]string{"authorize URL": si.AuthorizeURL, "token URL": si.TokenURL} {
		if err := checkURL(name, raw); err != nil {
			return err
		}
	}
	return checkURL("stream URL", si.StreamURL)
}

// checkURL requires raw to be an absolute https URL (http only on
// loopback); an empty stream URL is allowed (none).
func checkURL(name, raw string) error {
	if raw == "" && name == "stream URL" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && (u.Scheme != "http" || !isLoopback(u.Hostname()))) {
		return fmt.Errorf("console sign-in: the %s %q must be an absolute https URL", name, raw)
	}
	return nil
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// configPath answers the page's sign-in settings.
const configPath = Prefix + "config.json"

// Handler serves the console with the token form (local mode).
func Handler() http.Handler { return HandlerWith(SignIn{}) }

// HandlerWith serves the console's files under Prefix, and at
// Prefix+"config.json" how the page signs in. Every response forbids
// framing and inline script sources other than the console's own files, so
// a token kept in the page's sessionStorage is not exposed to another
// origin; only the identity provider's token endpoint is added to the
// origins the page may call.
func HandlerWith(si SignIn) http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		// The embedded tree is fixed at build time; a missing directory is a
		// broken build, not a runtime condition.
		panic(err)
	}
	if len(si.Scopes) == 0 {
		si.Scopes = []string{"openid", "email", "profile"}
	}
	config := []byte(`{"sign_in":"token"}`)
	connect := "'self'"
	if si.enabled() {
		b, err := json.Marshal(struct {
			Mode string `json:"sign_in"`
			SignIn
		}{"oidc", si})
		if err != nil {
			panic(err) // strings only
		}
		config = b
		if u, err := url.Parse(si.TokenURL); err == nil {
			connect += " " + u.Scheme + "://" + u.Host
		}
	} else if si.StreamURL != "" {
		b, err := json.Marshal(struct {
			Mode      string `json:"sign_in"`
			StreamURL string `json:"stream_url"`
		}{"token", si.StreamURL})
		if err != nil {
			panic(err) // strings only
		}
		config = b
	}
	if u, err := url.Parse(si.StreamURL); err == nil && si.StreamURL != "" {
		// The page reads the streams there, with the operator's token.
		connect += " " + u.Scheme + "://" + u.Host
	}
	csp := "default-src 'self'; connect-src " + connect + "; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
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
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		switch r.URL.Path {
		case configPath:
			h.Set("Content-Type", "application/json")
			_, _ = w.Write(config)
			return
		case Prefix + "index.html":
			// The sign-in's callback URL: served as is, where a file
			// server would redirect it to the directory (API Gateway
			// routes no path that ends in a slash).
			http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(index))
			return
		case strings.TrimSuffix(Prefix, "/"):
			http.Redirect(w, r, Prefix+"index.html", http.StatusFound)
			return
		}
		files.ServeHTTP(w, r)
	})
}
