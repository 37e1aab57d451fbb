package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/maasflow/maasflow/cmd/maasflow/internal/admin"
)

// loginCacheFile is where `maasflow login` keeps the operator's tokens.
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
	// Endpoint is the Cognito API or the OIDC token endpoint used to refresh.
	Endpoint string `json:"endpoint"`
	Cognito  bool   `json:"cognito,omitempty"`
}

// runLogin runs `maasflow login`: it signs an operator in at the admin
// API's token issuer (a Cognito user pool with username and password, or
// any OIDC issuer with the device authorization grant), caches the tokens
// (0600) and prints the ID token to use as $MAASFLOW_ADMIN_TOKEN. With
// --print it prints a valid token from the cache, refreshing it first
// when it is about to expire.
func runLogin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("maasflow login", flag.ContinueOnError)
	fs.SetOutput(stderr)
	issuer := fs.String("issuer", os.Getenv("MAASFLOW_OIDC_ISSUER"), "token issuer URL (stack output of the Cognito pool, or your OIDC issuer); $MAASFLOW_OIDC_ISSUER")
	clientID := fs.String("client-id", os.Getenv("MAASFLOW_OIDC_CLIENT_ID"), "OAuth client ID (stack output UserPoolClientId); $MAASFLOW_OIDC_CLIENT_ID")
	username := fs.String("username", "", "Cognito user name (prompted when empty)")
	printOnly := fs.Bool("print", false, "print a valid token from the cache, refreshing it when needed")
	cacheDir := fs.String("cache-dir", defaultConfigDir(), "where the tokens are cached when no context is used")
	ctxFlag := fs.String("context", "", "the config file's context to sign in for (default its current-context); its issuer and client id are the defaults")
	endpoint := fs.String("cognito-endpoint", "", "Cognito API endpoint (default https://cognito-idp.<region>.amazonaws.com/)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cachePath := filepath.Join(*cacheDir, loginCacheFile)
	cfg, err := admin.LoadConfig(admin.ConfigPath(os.Getenv))
	if err != nil {
		fmt.Fprintf(stderr, "maasflow login: %v\n", err)
		return 1
	}
	ctxName, cx, err := cfg.Selected(*ctxFlag)
	if err != nil {
		fmt.Fprintf(stderr, "maasflow login: %v\n", err)
		return 2
	}
	if cx != nil {
		// The token lives with its context: every admin command of the
		// context uses it.
		cachePath = admin.TokenPath(admin.ConfigDir(os.Getenv), ctxName)
		if *issuer == "" {
			*issuer = cx.Issuer
		}
		if *clientID == "" {
			*clientID = cx.ClientID
		}
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if *printOnly {
		tok, err := cachedToken(ctx, hc, cachePath, time.Now)
		if err != nil {
			fmt.Fprintf(stderr, "maasflow login: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, tok)
		return 0
	}
	if *issuer == "" || *clientID == "" {
		fmt.Fprintln(stderr, "maasflow login: --issuer and --client-id are required")
		return 2
	}
	var c loginCache
	if m := cognitoIssuerRE.FindStringSubmatch(*issuer); m != nil {
		ep := *endpoint
		if ep == "" {
			ep = "https://cognito-idp." + m[1] + ".amazonaws.com/"
		}
		user, password, perr := promptCredentials(ctx, *username, stderr)
		if perr != nil {
			fmt.Fprintf(stderr, "maasflow login: %v\n", perr)
			return 1
		}
		c, err = cognitoAuth(ctx, hc, ep, *clientID, map[string]string{"USERNAME": user, "PASSWORD": password}, "USER_PASSWORD_AUTH")
	} else {
		c, err = deviceLogin(ctx, hc, *issuer, *clientID, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "maasflow login: %v\n", err)
		return 1
	}
	c.Issuer, c.ClientID = *issuer, *clientID
	if err := saveLogin(cachePath, c); err != nil {
		fmt.Fprintf(stderr, "maasflow login: %v\n", err)
		return 1
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

// promptCredentials asks for what was not given; the password is read
// without echo when stdin is a terminal.
func promptCredentials(ctx context.Context, user string, stderr io.Writer) (string, string, error) {
	in := os.Stdin
	if user == "" {
		fmt.Fprint(stderr, "username: ")
		var err error
		if user, err = readLine(in); err != nil {
			return "", "", err
		}
	}
	fmt.Fprint(stderr, "password: ")
	// On a terminal the password is not echoed (stty); from a pipe it is
	// read as is.
	if fi, err := in.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		echo := func(on bool) {
			arg := "-echo"
			if on {
				arg = "echo"
			}
			cmd := exec.CommandContext(ctx, "stty", arg)
			cmd.Stdin = in
			_ = cmd.Run()
		}
		echo(false)
		defer func() { echo(true); fmt.Fprintln(stderr) }()
	}
	pw, err := readLine(in)
	return user, pw, err
}

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

// cognitoAuth calls the Cognito user pool's InitiateAuth (a public,
// unsigned API for app clients without a secret).
func cognitoAuth(ctx context.Context, hc *http.Client, endpoint, clientID string, params map[string]string, flow string) (loginCache, error) {
	body, _ := json.Marshal(map[string]any{"AuthFlow": flow, "ClientId": clientID, "AuthParameters": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body)) //nolint:gosec // G704: the operator names the issuer
	if err != nil {
		return loginCache{}, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("X-Amz-Target", "AWSCognitoIdentityProviderService.InitiateAuth")
	var out struct {
		AuthenticationResult *struct {
			IDToken      string `json:"IdToken"`
			RefreshToken string `json:"RefreshToken"`
			ExpiresIn    int    `json:"ExpiresIn"`
		} `json:"AuthenticationResult"`
		ChallengeName string `json:"ChallengeName"`
		Type          string `json:"__type"`
		Message       string `json:"message"`
	}
	status, err := doJSON(hc, req, &out)
	if err != nil {
		return loginCache{}, err
	}
	switch {
	case status != http.StatusOK:
		// Cognito's messages name the problem, never the password.
		return loginCache{}, fmt.Errorf("sign-in refused: %s %s", out.Type, out.Message)
	case out.ChallengeName != "":
		return loginCache{}, fmt.Errorf("the user pool asks for %s: finish it in the hosted UI or with the AWS CLI first", out.ChallengeName)
	case out.AuthenticationResult == nil || out.AuthenticationResult.IDToken == "":
		return loginCache{}, errors.New("the user pool answered without tokens")
	}
	r := out.AuthenticationResult
	return loginCache{IDToken: r.IDToken, RefreshToken: r.RefreshToken, Endpoint: endpoint, Cognito: true,
		ExpiresAt: time.Now().Add(time.Duration(r.ExpiresIn) * time.Second)}, nil
}

// deviceLogin runs the OAuth 2.0 device authorization grant (RFC 8628)
// against an OIDC issuer.
func deviceLogin(ctx context.Context, hc *http.Client, issuer, clientID string, stderr io.Writer) (loginCache, error) {
	var disc struct {
		DeviceEndpoint string `json:"device_authorization_endpoint"`
		TokenEndpoint  string `json:"token_endpoint"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(issuer, "/")+"/.well-known/openid-configuration", nil) //nolint:gosec // G704: the operator names the issuer
	if err != nil {
		return loginCache{}, err
	}
	if status, err := doJSON(hc, req, &disc); err != nil || status != http.StatusOK || disc.DeviceEndpoint == "" || disc.TokenEndpoint == "" {
		return loginCache{}, errors.New("the issuer's discovery document names no device authorization endpoint")
	}
	var dev struct {
		DeviceCode      string `json:"device_code"`
		UserCode        string `json:"user_code"`
		VerificationURI string `json:"verification_uri"`
		Complete        string `json:"verification_uri_complete"`
		Interval        int    `json:"interval"`
		ExpiresIn       int    `json:"expires_in"`
	}
	if status, err := postForm(ctx, hc, disc.DeviceEndpoint, url.Values{"client_id": {clientID}, "scope": {"openid offline_access"}}, &dev); err != nil || status != http.StatusOK {
		return loginCache{}, fmt.Errorf("device authorization refused (status %d)", status)
	}
	fmt.Fprintf(stderr, "open %s and enter the code %s\n", dev.VerificationURI, dev.UserCode)
	interval := time.Duration(max(dev.Interval, 1)) * time.Second
	deadline := time.Now().Add(time.Duration(max(dev.ExpiresIn, 60)) * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return loginCache{}, ctx.Err()
		case <-time.After(interval):
		}
		c, pending, err := tokenRequest(ctx, hc, disc.TokenEndpoint, url.Values{
			"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {dev.DeviceCode}, "client_id": {clientID},
		})
		if pending == "slow_down" {
			interval += 5 * time.Second
		}
		if pending != "" {
			continue
		}
		return c, err
	}
	return loginCache{}, errors.New("the device code expired before the sign-in finished")
}

// tokenRequest posts to the token endpoint; pending is the OAuth error of
// a device grant still waiting (authorization_pending, slow_down).
func tokenRequest(ctx context.Context, hc *http.Client, endpoint string, form url.Values) (loginCache, string, error) {
	var out struct {
		IDToken      string `json:"id_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int    `json:"expires_in"`
		Error        string `json:"error"`
	}
	status, err := postForm(ctx, hc, endpoint, form, &out)
	if err != nil {
		return loginCache{}, "", err
	}
	if out.Error == "authorization_pending" || out.Error == "slow_down" {
		return loginCache{}, out.Error, nil
	}
	if status != http.StatusOK || out.IDToken == "" {
		return loginCache{}, "", fmt.Errorf("token request refused: %s", out.Error)
	}
	return loginCache{IDToken: out.IDToken, RefreshToken: out.RefreshToken, Endpoint: endpoint,
		ExpiresAt: time.Now().Add(time.Duration(out.ExpiresIn) * time.Second)}, "", nil
}

// cachedToken returns the cached ID token, refreshed when it expires
// within a minute.
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
		fresh, err = cognitoAuth(ctx, hc, c.Endpoint, c.ClientID, map[string]string{"REFRESH_TOKEN": c.RefreshToken}, "REFRESH_TOKEN_AUTH")
	} else {
		fresh, _, err = tokenRequest(ctx, hc, c.Endpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {c.RefreshToken}, "client_id": {c.ClientID}})
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
	return os.WriteFile(path, b, 0o600) //nolint:gosec // G703: the operator's own cache path
}

func postForm(ctx context.Context, hc *http.Client, endpoint string, form url.Values, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return doJSON(hc, req, out)
}

func doJSON(hc *http.Client, req *http.Request, out any) (int, error) {
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req) //nolint:gosec // G704: the issuer the operator named, or the endpoint it announced
	if err != nil {
		return 0, errors.New("cannot reach " + req.URL.Host)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return resp.StatusCode, fmt.Errorf("%s answered %d without JSON", req.URL.Host, resp.StatusCode)
	}
	return resp.StatusCode, nil
}

// loginCommand is `maasflow login`. It parses its own flags (runLogin).
func (c *cli) loginCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "login [flags]",
		Short: "sign in at the admin API's token issuer and print the token",
		Long: `Sign in at the admin API's issuer (a Cognito user pool with username and password,
or any OIDC issuer with the device authorization grant), cache the tokens and print
the ID token as MAASFLOW_ADMIN_TOKEN; --print prints a fresh one from the cache.
--help lists the flags.`,
		DisableFlagParsing: true,
		RunE:               c.selfParsed(runLogin),
	}
}
