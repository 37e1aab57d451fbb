package browser

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/console"
)

// fakeIdP is an OAuth 2.0 provider with the two endpoints the console
// uses, checking the authorization code grant with PKCE as Cognito does:
// the code is bound to the S256 challenge, the client and the redirect
// URI, is good once, and is exchanged only with the verifier whose hash is
// the challenge.
type fakeIdP struct {
	t        *testing.T
	clientID string
	idToken  string
	origin   string // the console's origin, allowed to call the token endpoint
	callback string // the client's registered redirect URI

	mu        sync.Mutex
	codes     map[string]pkceGrant
	exchanged int
	refused   []string
}

type pkceGrant struct{ challenge, redirectURI string }

func (f *fakeIdP) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth2/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("response_type") != "code" || q.Get("client_id") != f.clientID || q.Get("code_challenge_method") != "S256" ||
			q.Get("code_challenge") == "" || q.Get("state") == "" || !strings.Contains(q.Get("scope"), "openid") {
			http.Error(w, "bad authorize request: "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		code := "code-" + q.Get("state")[:8]
		f.codes[code] = pkceGrant{challenge: q.Get("code_challenge"), redirectURI: q.Get("redirect_uri")}
		f.mu.Unlock()
		// Only the client's registered callback, as Cognito allows.
		if q.Get("redirect_uri") != f.callback {
			http.Error(w, "redirect_uri is not the client's callback", http.StatusBadRequest)
			return
		}
		back, err := url.Parse(f.callback)
		if err != nil {
			http.Error(w, "bad callback", http.StatusInternalServerError)
			return
		}
		v := url.Values{"code": {code}, "state": {q.Get("state")}}
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /oauth2/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", f.origin)
		refuse := func(why string) {
			f.mu.Lock()
			f.refused = append(f.refused, why)
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": why})
		}
		if err := r.ParseForm(); err != nil {
			refuse("unreadable form")
			return
		}
		f.mu.Lock()
		g, ok := f.codes[r.PostForm.Get("code")]
		delete(f.codes, r.PostForm.Get("code")) // good once
		f.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		switch {
		case r.PostForm.Get("grant_type") != "authorization_code":
			refuse("grant_type")
		case !ok:
			refuse("unknown or used code")
		case r.PostForm.Get("client_id") != f.clientID:
			refuse("client_id")
		case r.PostForm.Get("redirect_uri") != g.redirectURI:
			refuse("redirect_uri differs from the authorize request's")
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			refuse("code_verifier does not match the challenge")
		default:
			f.mu.Lock()
			f.exchanged++
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"id_token": f.idToken, "access_token": "access-" + f.idToken,
				"token_type": "Bearer", "expires_in": 3600})
		}
	})
	return mux
}

// waitLocation waits until the tab's address is want, across navigations
// (a poll inside the page would lose its context when the page changes).
func waitLocation(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	deadline := time.Now().Add(uiWait)
	var at string
	for time.Now().Before(deadline) {
		if err := chromedp.Run(ctx, chromedp.Location(&at)); err == nil && at == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the tab is at %s, not %s", at, want)
}

// The deployed console's sign-in: the page runs the authorization code
// grant with PKCE against the identity provider, keeps the ID token in
// the tab, and calls the API with it.
func TestConsoleSignsInWithPKCE(t *testing.T) {
	ctx, problems := browser(t)
	st := startStack(t)
	// The console as the api function serves it on AWS, in front of the
	// local stack's API (what API Gateway's routes do there).
	apiURL, err := url.Parse(st.s.APIURL)
	require.NoError(t, err)
	idp := &fakeIdP{t: t, clientID: "console-test", idToken: st.s.AdminToken, codes: map[string]pkceGrant{}}
	idpSrv := httptest.NewServer(idp.handler())
	t.Cleanup(idpSrv.Close)
	pages := console.HandlerWith(console.SignIn{AuthorizeURL: idpSrv.URL + "/oauth2/authorize", TokenURL: idpSrv.URL + "/oauth2/token",
		ClientID: idp.clientID})
	proxy := httputil.NewSingleHostReverseProxy(apiURL)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, console.Prefix) {
			pages.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	// The page's stream through the front outlives the test's last step.
	t.Cleanup(func() { front.CloseClientConnections(); front.Close() })
	idp.origin, idp.callback = front.URL, front.URL+"/console/index.html"

	var formHidden, idpShown bool
	var heading, stored, address string
	run(t, ctx,
		chromedp.Navigate(front.URL+"/console/index.html"),
		chromedp.WaitVisible("#signin-idp-go", chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById("signin-form").hidden`, &formHidden),
		chromedp.Evaluate(`!document.getElementById("signin-idp").hidden`, &idpShown),
		chromedp.Click("#signin-idp-go", chromedp.ByQuery),
	)
	// Two navigations follow (to the provider and back): wait for the
	// page's address to settle on the console before reading it.
	waitLocation(t, ctx, front.URL+"/console/index.html#/overview")
	run(t, ctx,
		waitJS(`document.querySelector("#view h1") && document.querySelector("#view h1").textContent === "Fleet overview"`),
		text("#view h1", &heading),
		chromedp.Evaluate(`sessionStorage.getItem("maasflow.adminToken")`, &stored),
		chromedp.Location(&address),
	)
	assert.True(t, formHidden, "no token form where an identity provider signs in")
	assert.True(t, idpShown)
	assert.Equal(t, "Fleet overview", heading, "the API accepted the token the provider issued")
	assert.Equal(t, st.s.AdminToken, stored, "the ID token is kept in the tab")
	assert.NotContains(t, address, "code=", "the code leaves the address bar")
	assert.NotContains(t, address, st.s.AdminToken)
	idp.mu.Lock()
	assert.Equal(t, 1, idp.exchanged, "one code exchanged, with the verifier")
	assert.Empty(t, idp.refused)
	idp.mu.Unlock()

	// A code replayed, as an attacker holding the callback URL would: the
	// provider refuses it (good once, and the verifier left with the
	// tab), and the page says so instead of signing in.
	var refusal string
	run(t, ctx,
		chromedp.Evaluate(`sessionStorage.clear(); true`, nil),
		chromedp.Navigate(front.URL+"/console/index.html?code=code-replayed&state=nope"),
		waitJS(`document.getElementById("signin-idp-error").textContent !== ""`),
		text("#signin-idp-error", &refusal),
	)
	assert.Contains(t, refusal, "does not belong to this tab")
	assert.Empty(t, problems(), "the page ran without errors")
}
