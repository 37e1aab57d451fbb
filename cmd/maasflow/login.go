package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	cip "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider"
	ciptypes "github.com/aws/aws-sdk-go-v2/service/cognitoidentityprovider/types"
	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/oauth2"
	"golang.org/x/term"

	"github.com/maasflow/maasflow/cmd/maasflow/internal/admin"
)

// loginCacheFile is where `maasflow login` keeps the operator's tokens
// when no context is used.
const loginCacheFile = "token.json"

// cognitoIssuerRE recognises a Cognito user pool issuer and its region.
var cognitoIssuerRE = regexp.MustCompile(`^https://cognito-idp\.([a-z0-9-]+)\.amazonaws\.com/[A-Za-z0-9_-]+$`)

// loginCache is the cached session: an ID token for the admin API and the
// refresh token that renews it.
type loginCache struct {
	Issuer       string    `json:"issuer"`
	ClientID     string    `json:"client_id"`
	IDToken      string    `json:"id_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	ExpiresAt    time.Time `json:"expires_at"`
	// Endpoint is the Cognito API endpoint ("" for the region's) or the
	// OIDC token endpoint used to refresh.
	Endpoint string `json:"endpoint"`
	Cognito  bool   `json:"cognito,omitempty"`
}

// loginOptions are login's flags.
type loginOptions struct {
	issuer, clientID, username, cacheDir, endpoint, context string
	callback                                                string
	print, browser                                          bool
}

// defaultCallback is the CLI's loopback redirect URI, the one the stack's
// app client allows unless maasflow:cliCallbackUrls says otherwise.
const defaultCallback = "http://localhost:8400/callback"

func (o *loginOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&o.issuer, "issuer", os.Getenv("MAASFLOW_OIDC_ISSUER"), "token issuer URL (stack output of the Cognito pool, or your OIDC issuer); $MAASFLOW_OIDC_ISSUER; default the context's")
	fs.StringVar(&o.clientID, "client-id", os.Getenv("MAASFLOW_OIDC_CLIENT_ID"), "OAuth client ID (stack output UserPoolClientId); $MAASFLOW_OIDC_CLIENT_ID; default the context's")
	fs.StringVar(&o.username, "username", "", "Cognito user name: sign in with a password (USER_PASSWORD_AUTH, for pools that allow it) instead of the browser")
	fs.BoolVar(&o.browser, "browser", false, "sign in in a browser (authorization code with PKCE at --callback); the default for a Cognito issuer without --username")
	fs.StringVar(&o.callback, "callback", defaultCallback, "loopback redirect URI for --browser; the app client must allow it")
	fs.BoolVar(&o.print, "print", false, "print a valid token from the cache, refreshing it when needed")
	fs.StringVar(&o.cacheDir, "cache-dir", defaultConfigDir(), "where the tokens are cached when no context is used")
	fs.StringVar(&o.endpoint, "cognito-endpoint", "", "Cognito API endpoint (default the issuer region's)")
	fs.StringVar(&o.context, "context", "", "the config file's context to sign in for (default its current-context); its issuer and client id are the defaults")
}

const loginLong = `Sign in at the admin API's issuer and store the tokens with the
config file's context (maasflow config), whose admin commands then use them; without a
context they are cached in the user config directory and the ID token is printed as
MAASFLOW_ADMIN_TOKEN. --print prints a fresh token from the cache.

How: a Cognito user pool signs in in a browser (authorization code with PKCE, the
redirect caught on --callback, by default http://localhost:8400/callback), or with
--username and a password where the pool allows it; any other OIDC issuer uses the
device authorization grant, or the browser with --browser.`

// loginCommand is `maasflow login`.
func (c *cli) loginCommand() *cobra.Command {
	o := &loginOptions{}
	cmd := &cobra.Command{
		Use:   "login [flags]",
		Short: "sign in at the admin API's token issuer and store the token with the context",
		Long:  loginLong,
		Args:  noPositional,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if code := o.run(cmd.Context(), c.env.stdout, c.env.stderr); code != 0 {
				c.err = &adminExitCodeError{Code: code}
			}
			return nil
		},
	}
	o.flags(cmd.Flags())
	return cmd
}

// runLogin runs `maasflow login` with args on its own (the tests' entry):
// a flag error is exit 2.
func runLogin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := &loginOptions{}
	fs := pflag.NewFlagSet("maasflow login", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	return o.run(ctx, stdout, stderr)
}

// run signs the operator in, or with --print prints a valid token.
func (o *loginOptions) run(ctx context.Context, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "maasflow login: %v\n", err)
		return code
	}
	cachePath := filepath.Join(o.cacheDir, loginCacheFile)
	cfg, err := admin.LoadConfig(admin.ConfigPath(os.Getenv))
	if err != nil {
		return fail(1, err)
	}
	ctxName, cx, err := cfg.Selected(o.context)
	if err != nil {
		return fail(2, err)
	}
	if cx != nil {
		// The token lives with its context: every admin command of the
		// context uses it.
		cachePath = admin.TokenPath(admin.ConfigDir(os.Getenv), ctxName)
		if o.issuer == "" {
			o.issuer = cx.Issuer
		}
		if o.clientID == "" {
			o.clientID = cx.ClientID
		}
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if o.print {
		tok, err := cachedToken(ctx, hc, cachePath, time.Now)
		if err != nil {
			return fail(1, err)
		}
		fmt.Fprintln(stdout, tok)
		return 0
	}
	if o.issuer == "" || o.clientID == "" {
		return fail(2, errors.New("--issuer and --client-id are required (or a context that names them)"))
	}
	var c loginCache
	cognito := cognitoIssuerRE.MatchString(o.issuer)
	switch {
	case cognito && o.username != "":
		user, password, perr := promptCredentials(o.username, stderr)
		if perr != nil {
			return fail(1, perr)
		}
		c, err = cognitoAuth(ctx, hc, o.issuer, o.endpoint, o.clientID, map[string]string{"USERNAME": user, "PASSWORD": password}, ciptypes.AuthFlowTypeUserPasswordAuth)
	case cognito || o.browser:
		c, err = browserLogin(ctx, hc, o.issuer, o.clientID, o.callback, stderr)
	default:
		c, err = deviceLogin(ctx, hc, o.issuer, o.clientID, stderr)
	}
	if err != nil {
		return fail(1, err)
	}
	c.Issuer, c.ClientID = o.issuer, o.clientID
	if err := saveLogin(cachePath, c); err != nil {
		return fail(1, err)
	}
	fmt.Fprintf(stderr, "signed in; token valid until %s, cached in %s\n", c.ExpiresAt.Format(time.RFC3339), cachePath)
	if cx != nil {
		fmt.Fprintf(stderr, "the admin commands of context %s use it\n", ctxName)
	}
	fmt.Fprintf(stdout, "export %s=%s\n", envAdminToken, c.IDToken)
	return 0
}

// storedToken is the token of the session stored at path, refreshed when
// about to expire; "" when nobody signed in there.
func storedToken(ctx context.Context, path string) (string, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return cachedToken(ctx, &http.Client{Timeout: 30 * time.Second}, path, time.Now)
}

func defaultConfigDir() string {
	if dir, err := os.UserConfigDir(); err == nil {
		return filepath.Join(dir, "maasflow")
	}
	return ".maasflow"
}

// promptCredentials asks for what was not given; on a terminal the
// password is read without echo (golang.org/x/term), from a pipe as is.
func promptCredentials(user string, stderr io.Writer) (string, string, error) {
	in := os.Stdin
	if user == "" {
		fmt.Fprint(stderr, "username: ")
		var err error
		if user, err = readLine(in); err != nil {
			return "", "", err
		}
	}
	fmt.Fprint(stderr, "password: ")
	if fd := int(in.Fd()); term.IsTerminal(fd) {
		pw, err := term.ReadPassword(fd)
		fmt.Fprintln(stderr)
		return user, string(pw), err
	}
	pw, err := readLine(in)
	return user, pw, err
}

// readLine reads one line a byte at a time, so nothing after it is
// consumed from a shared stdin.
func readLine(r io.Reader) (string, error) {
	var b [1]byte
	var line []byte
	for {
		n, err := r.Read(b[:])
		if n == 1 && b[0] != '\n' {
			line = append(line, b[0])
			continue
		}
		if n == 1 || len(line) > 0 || errors.Is(err, io.EOF) {
			return strings.TrimRight(string(line), "\r"), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// cognitoClient is the user pool's API for the issuer's region, at
// endpoint when one is given. InitiateAuth is public for app clients
// without a secret: the requests go unsigned.
func cognitoClient(hc *http.Client, issuer, endpoint string) *cip.Client {
	region := ""
	if m := cognitoIssuerRE.FindStringSubmatch(issuer); m != nil {
		region = m[1]
	}
	return cip.New(cip.Options{
		Region: region, HTTPClient: hc, Credentials: aws.AnonymousCredentials{},
		BaseEndpoint: func() *string {
			if endpoint == "" {
				return nil
			}
			return aws.String(endpoint)
		}(),
	})
}

// cognitoAuth signs in (or refreshes) through the user pool's
// InitiateAuth.
func cognitoAuth(ctx context.Context, hc *http.Client, issuer, endpoint, clientID string, params map[string]string, flow ciptypes.AuthFlowType) (loginCache, error) {
	out, err := cognitoClient(hc, issuer, endpoint).InitiateAuth(ctx, &cip.InitiateAuthInput{
		AuthFlow: flow, ClientId: aws.String(clientID), AuthParameters: params,
	})
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &apiErr):
		// Cognito's messages name the problem, never the password.
		return loginCache{}, fmt.Errorf("sign-in refused: %s %s", apiErr.ErrorCode(), apiErr.ErrorMessage())
	case err != nil:
		return loginCache{}, fmt.Errorf("cannot reach the user pool: %w", err)
	case out.ChallengeName != "":
		return loginCache{}, fmt.Errorf("the user pool asks for %s: finish it in the hosted UI or with the AWS CLI first", out.ChallengeName)
	case out.AuthenticationResult == nil || aws.ToString(out.AuthenticationResult.IdToken) == "":
		return loginCache{}, errors.New("the user pool answered without tokens")
	}
	r := out.AuthenticationResult
	return loginCache{IDToken: aws.ToString(r.IdToken), RefreshToken: aws.ToString(r.RefreshToken), Endpoint: endpoint, Cognito: true,
		ExpiresAt: time.Now().Add(time.Duration(r.ExpiresIn) * time.Second)}, nil
}

// oidcConfig reads the issuer's discovery document into an OAuth client
// configuration for the device authorization grant.
func oidcConfig(ctx context.Context, hc *http.Client, issuer, clientID string) (*oauth2.Config, error) {
	disc, err := discover(ctx, hc, issuer)
	if err != nil {
		return nil, err
	}
	if disc.DeviceEndpoint == "" || disc.TokenEndpoint == "" {
		return nil, errors.New("the issuer's discovery document names no device authorization endpoint")
	}
	return &oauth2.Config{ClientID: clientID, Scopes: []string{"openid", "offline_access"},
		Endpoint: oauth2.Endpoint{DeviceAuthURL: disc.DeviceEndpoint, TokenURL: disc.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}, nil
}

// discovery is what login reads of an issuer's OIDC discovery document.
type discovery struct {
	AuthEndpoint   string `json:"authorization_endpoint"`
	DeviceEndpoint string `json:"device_authorization_endpoint"`
	TokenEndpoint  string `json:"token_endpoint"`
}

// discover reads the issuer's discovery document (a Cognito pool's names
// its managed login domain's endpoints).
func discover(ctx context.Context, hc *http.Client, issuer string) (discovery, error) {
	var disc discovery
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(issuer, "/")+"/.well-known/openid-configuration", nil)
	if err != nil {
		return disc, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return disc, errors.New("cannot reach " + req.URL.Host)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&disc) != nil {
		return disc, errors.New("the issuer has no readable discovery document")
	}
	return disc, nil
}

// deviceLogin runs the OAuth 2.0 device authorization grant (RFC 8628)
// against an OIDC issuer with golang.org/x/oauth2.
func deviceLogin(ctx context.Context, hc *http.Client, issuer, clientID string, stderr io.Writer) (loginCache, error) {
	conf, err := oidcConfig(ctx, hc, issuer, clientID)
	if err != nil {
		return loginCache{}, err
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, hc)
	da, err := conf.DeviceAuth(ctx)
	if err != nil {
		return loginCache{}, fmt.Errorf("device authorization refused: %w", err)
	}
	fmt.Fprintf(stderr, "open %s and enter the code %s\n", da.VerificationURI, da.UserCode)
	tok, err := conf.DeviceAccessToken(ctx, da)
	if err != nil {
		return loginCache{}, fmt.Errorf("sign-in did not finish: %w", err)
	}
	return sessionOf(tok, conf.Endpoint.TokenURL)
}

// browserLogin runs the authorization code grant with PKCE (RFC 7636) in
// the operator's browser: it prints the issuer's authorization URL, catches
// the redirect on the loopback callback, checks its state and exchanges the
// code with the verifier only this process holds. A public client (no
// secret) can sign in this way; the issuer's own login page does the
// password and MFA.
func browserLogin(ctx context.Context, hc *http.Client, issuer, clientID, callback string, stderr io.Writer) (loginCache, error) {
	cb, err := url.Parse(callback)
	if err != nil || cb.Scheme != "http" || (cb.Hostname() != "localhost" && cb.Hostname() != "127.0.0.1" && cb.Hostname() != "::1") || cb.Port() == "" {
		return loginCache{}, errors.New("--callback must be a loopback http URL with a port, e.g. " + defaultCallback)
	}
	disc, err := discover(ctx, hc, issuer)
	if err != nil {
		return loginCache{}, err
	}
	if disc.AuthEndpoint == "" || disc.TokenEndpoint == "" {
		return loginCache{}, errors.New("the issuer's discovery document names no authorization endpoint (a Cognito pool needs its managed login domain)")
	}
	conf := &oauth2.Config{ClientID: clientID, RedirectURL: callback, Scopes: []string{"openid", "email", "profile"},
		Endpoint: oauth2.Endpoint{AuthURL: disc.AuthEndpoint, TokenURL: disc.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
	state, verifier := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cb.Host)
	if err != nil {
		return loginCache{}, fmt.Errorf("listen for the sign-in redirect on %s: %w", cb.Host, err)
	}
	type result struct {
		code string
		err  error
	}
	got := make(chan result, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+cb.EscapedPath(), func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		res := result{code: q.Get("code")}
		switch {
		case q.Get("state") != state:
			res.err = errors.New("the sign-in redirect carried another state: start maasflow login again")
		case q.Get("error") != "":
			res.err = fmt.Errorf("sign-in refused: %s %s", q.Get("error"), q.Get("error_description"))
		case res.code == "":
			res.err = errors.New("the sign-in redirect carried no code")
		}
		if res.err != nil {
			http.Error(w, res.err.Error(), http.StatusBadRequest)
		} else {
			_, _ = io.WriteString(w, "maasflow: signed in, you can close this tab.\n")
		}
		select {
		case got <- res:
		default:
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close() }()

	fmt.Fprintf(stderr, "open this URL in a browser to sign in:\n  %s\n", conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)))
	wait, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var res result
	select {
	case res = <-got:
	case <-wait.Done():
		return loginCache{}, errors.New("no sign-in within 5 minutes")
	}
	if res.err != nil {
		return loginCache{}, res.err
	}
	tok, err := conf.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), res.code, oauth2.VerifierOption(verifier))
	if err != nil {
		return loginCache{}, fmt.Errorf("the issuer refused the sign-in code: %w", err)
	}
	return sessionOf(tok, conf.Endpoint.TokenURL)
}

// sessionOf is the cached session of an OAuth token: its OIDC ID token.
func sessionOf(tok *oauth2.Token, tokenURL string) (loginCache, error) {
	id, _ := tok.Extra("id_token").(string)
	if id == "" {
		return loginCache{}, errors.New("the issuer answered without an ID token")
	}
	exp := tok.Expiry
	if exp.IsZero() {
		exp = time.Now().Add(time.Hour)
	}
	return loginCache{IDToken: id, RefreshToken: tok.RefreshToken, Endpoint: tokenURL, ExpiresAt: exp}, nil
}

// cachedToken returns the cached ID token, refreshed when it expires
// within a minute (Cognito's REFRESH_TOKEN_AUTH, or the OAuth token
// source's refresh).
func cachedToken(ctx context.Context, hc *http.Client, path string, now func() time.Time) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", errors.New("not signed in: run maasflow login")
	}
	var c loginCache
	if err := json.Unmarshal(b, &c); err != nil {
		return "", errors.New("the token cache is damaged: run maasflow login")
	}
	if now().Add(time.Minute).Before(c.ExpiresAt) {
		return c.IDToken, nil
	}
	if c.RefreshToken == "" {
		return "", errors.New("the token expired: run maasflow login")
	}
	var fresh loginCache
	if c.Cognito {
		fresh, err = cognitoAuth(ctx, hc, c.Issuer, c.Endpoint, c.ClientID, map[string]string{"REFRESH_TOKEN": c.RefreshToken}, ciptypes.AuthFlowTypeRefreshTokenAuth)
	} else {
		conf := &oauth2.Config{ClientID: c.ClientID, Endpoint: oauth2.Endpoint{TokenURL: c.Endpoint, AuthStyle: oauth2.AuthStyleInParams}}
		var tok *oauth2.Token
		// An expired token makes the source refresh it.
		tok, err = conf.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, hc),
			&oauth2.Token{RefreshToken: c.RefreshToken, Expiry: now().Add(-time.Minute)}).Token()
		if err == nil {
			fresh, err = sessionOf(tok, c.Endpoint)
		}
	}
	if err != nil {
		return "", fmt.Errorf("refresh failed, run maasflow login: %w", err)
	}
	c.IDToken, c.ExpiresAt = fresh.IDToken, fresh.ExpiresAt
	if fresh.RefreshToken != "" {
		c.RefreshToken = fresh.RefreshToken
	}
	if err := saveLogin(path, c); err != nil {
		return "", err
	}
	return c.IDToken, nil
}

func saveLogin(path string, c loginCache) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(c) //nolint:gosec // G117: the token cache is the operator's own 0600 file
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
