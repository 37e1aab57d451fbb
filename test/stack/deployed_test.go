package stack

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/config"
)

// The environment that points the scenarios at a deployed stack (make
// localstack-test sets it; docs/deploy.md, "LocalStack").
const (
	// envTarget chooses the target: unset runs the lane in this process,
	// "localstack" the stack make localstack-deploy deployed.
	envTarget = "MAASFLOW_STACK_TARGET"
	// envOutputs is the file `cdk deploy --outputs-file` wrote.
	envOutputs = "MAASFLOW_STACK_OUTPUTS"
	// envStackName is the stack in that file (default maasflow-dev).
	envStackName = "MAASFLOW_STACK_NAME"
	// envToken is an operator's bearer token; without it the test serves
	// the issuer the stack was deployed with (envIssuer) and signs one.
	envToken       = "MAASFLOW_STACK_TOKEN"
	envIssuer      = "MAASFLOW_STACK_ISSUER"        // the issuer URL, as the stack reaches it
	envIssuerAddr  = "MAASFLOW_STACK_ISSUER_LISTEN" // where this test serves it
	envAudience    = "MAASFLOW_STACK_AUDIENCE"
	envAdminGroup  = "MAASFLOW_STACK_ADMIN_GROUP"
	envSimListen   = "MAASFLOW_STACK_SIM_LISTEN" // where this test serves the MAAS simulator
	envSimURL      = "MAASFLOW_STACK_SIM_URL"    // the simulator's base URL as the stack's functions reach it
	envEndpointURL = "AWS_ENDPOINT_URL"
)

// deployedWait bounds a workflow on a deployed stack: its state machines
// wait in real time (the machine watch wakes a wait at most a minute
// after the simulator moves).
const deployedWait = 20 * time.Minute

// deployedConfig is a deployed stack and how this test reaches it.
type deployedConfig struct {
	Outputs    string // cdk's outputs file
	StackName  string
	Endpoint   string // the AWS endpoint the deployment was made on (LocalStack)
	Token      string
	Issuer     string
	IssuerAddr string
	Audience   string
	AdminGroup string
	SimListen  string
	SimURL     string
	Wait       time.Duration
	Poll       time.Duration
	// StreamToken is a token the stream function accepts, when it is not
	// Token (in process, the API front takes the lane's own token).
	StreamToken string
}

func deployedConfigFromEnv() deployedConfig {
	return deployedConfig{
		Outputs: os.Getenv(envOutputs), StackName: os.Getenv(envStackName), Endpoint: os.Getenv(envEndpointURL),
		Token: os.Getenv(envToken), Issuer: os.Getenv(envIssuer), IssuerAddr: os.Getenv(envIssuerAddr),
		Audience: os.Getenv(envAudience), AdminGroup: os.Getenv(envAdminGroup),
		SimListen: os.Getenv(envSimListen), SimURL: os.Getenv(envSimURL), Wait: deployedWait,
	}
}

// loopbackURL refuses a URL whose host is not loopback: the fence that
// keeps a deployed-target run off AWS itself.
func loopbackURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s=%q is not an http(s) URL", field, raw)
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("%s=%q must be scheme://host[:port]", field, raw)
	}
	if h := u.Hostname(); h == "localhost" {
		return nil
	} else if a, err := netip.ParseAddr(h); err == nil && a.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s=%q: only a loopback LocalStack is allowed (localhost, 127.0.0.0/8, [::1])", field, raw)
}

// localAPIURL refuses an API URL that is not LocalStack's or loopback:
// the scenarios never send an operator's token to AWS.
func localAPIURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("the stack's ApiUrl %q does not parse", raw)
	}
	h := u.Hostname()
	if h == "localhost" || strings.HasSuffix(h, ".localhost.localstack.cloud") || h == "localhost.localstack.cloud" {
		return nil
	}
	if a, err := netip.ParseAddr(h); err == nil && a.IsLoopback() {
		return nil
	}
	return fmt.Errorf("the stack's ApiUrl %q is not a LocalStack or loopback URL: refusing to run against it", raw)
}

// stackOutputs reads one stack's outputs from cdk's outputs file.
func stackOutputs(path, stack string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (run make localstack-deploy first)", envOutputs, err)
	}
	var all map[string]map[string]string
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out, ok := all[stack]
	if !ok {
		return nil, fmt.Errorf("%s has no stack %s", path, stack)
	}
	return out, nil
}

// newDeployedTarget checks the fences, reads the stack's outputs, serves
// the simulator (and the issuer, unless given a token) where the stack's
// functions reach them, and returns the target.
func newDeployedTarget(t *testing.T, c deployedConfig) (*target, error) {
	t.Helper()
	if err := loopbackURL(envEndpointURL, c.Endpoint); err != nil {
		return nil, err
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN"} {
		if os.Getenv(k) != "" {
			return nil, fmt.Errorf("%s is set: run through make localstack-test, which clears every AWS credential but LocalStack's test keys", k)
		}
	}
	if c.StackName == "" {
		c.StackName = "maasflow-dev"
	}
	outs, err := stackOutputs(c.Outputs, c.StackName)
	if err != nil {
		return nil, err
	}
	api := strings.TrimSuffix(outs["ApiUrl"], "/")
	if api == "" {
		return nil, fmt.Errorf("the stack %s has no ApiUrl output", c.StackName)
	}
	if err := localAPIURL(api); err != nil {
		return nil, err
	}
	tg := &target{name: c.StackName + " at " + api, apiURL: api, token: c.Token, wait: c.Wait, poll: c.Poll, streamURL: outs["StreamUrl"]}
	if tg.streamURL != "" {
		if err := localAPIURL(tg.streamURL); err != nil {
			return nil, fmt.Errorf("StreamUrl: %w", err)
		}
	}
	if tg.wait == 0 {
		tg.wait = deployedWait
	}
	if tg.poll == 0 {
		tg.poll = time.Second
	}
	if tg.token == "" {
		if tg.token, err = serveIssuer(t, c); err != nil {
			return nil, err
		}
	}
	tg.streamToken = c.StreamToken
	if tg.streamToken == "" {
		tg.streamToken = tg.token
	}
	if tg.sim, err = serveSimulator(t, c); err != nil {
		return nil, err
	}
	return tg, nil
}

// serveIssuer serves the OpenID issuer the stack was deployed with and
// signs an operator's token.
func serveIssuer(t *testing.T, c deployedConfig) (string, error) {
	t.Helper()
	if c.IssuerAddr == "" || c.Audience == "" {
		return "", fmt.Errorf("set %s, or %s, %s and %s (make localstack-test does)", envToken, envIssuer, envIssuerAddr, envAudience)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", c.IssuerAddr)
	if err != nil {
		return "", fmt.Errorf("%s: %w", envIssuerAddr, err)
	}
	issuerURL := c.Issuer
	if issuerURL == "" {
		// In process only: the stack reaches the issuer where it listens.
		issuerURL = "http://" + ln.Addr().String()
	}
	is, err := newOIDCIssuer(issuerURL)
	if err != nil {
		_ = ln.Close()
		return "", err
	}
	serveOn(t, ln, is.handler())
	group := c.AdminGroup
	if group == "" {
		group = config.DefaultAdminGroup
	}
	return is.token(c.Audience, "cognito:groups", group)
}

// serveSimulator runs a MAAS simulator on c.SimListen over plain http (the
// functions' trust store holds no test CA), with the site bootstrap script
// next to it. A site may use http only with allow_http and a MAAS host on
// a private address, which host.docker.internal and loopback are.
func serveSimulator(t *testing.T, c deployedConfig) (*simSite, error) {
	t.Helper()
	if c.SimListen == "" {
		return nil, fmt.Errorf("set %s (make localstack-test does)", envSimListen)
	}
	sim := maassim.New(maassim.Options{Clock: asl.NewLoadClock(timeScale), SubnetCIDR: "10.10.0.0/20"})
	t.Cleanup(sim.Close)
	mux := http.NewServeMux()
	mux.Handle("/", sim)
	mux.HandleFunc("GET /_lane/site-bootstrap.sh", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(siteBootstrapScript))
	})
	addr, err := serve(t, c.SimListen, mux)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envSimListen, err)
	}
	local := "http://" + addr
	base := strings.TrimSuffix(c.SimURL, "/")
	if base == "" {
		base = local
	}
	ca, err := throwawayCA()
	if err != nil {
		return nil, err
	}
	return &simSite{maasURL: base + "/MAAS", controlURL: local, client: http.DefaultClient, apiKey: sim.APIKey(), allowHTTP: true,
		boot: bootstrapRef{URL: base + "/_lane/site-bootstrap.sh", Version: "lane-1", SHA256: sha256Hex(siteBootstrapScript), CABundle: ca}}, nil
}

// serve serves h on addr until the test ends; it returns the address it
// listens on.
func serve(t *testing.T, addr string, h http.Handler) (string, error) {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", addr)
	if err != nil {
		return "", err
	}
	serveOn(t, ln, h)
	return ln.Addr().String(), nil
}

func serveOn(t *testing.T, ln net.Listener, h http.Handler) {
	t.Helper()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// throwawayCA is a self-signed certificate for the site policy's CA
// bundle: the simulator's nodes never call the enrollment API with it.
func throwawayCA() (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "maasflow scenario CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), nil
}

// TestScenarios runs the scenarios on the target MAASFLOW_STACK_TARGET
// names. Unset, it runs them in this process through the deployed
// target's own plumbing (a cdk outputs file, a simulator served over http
// for allow_http, names unique per run), pointed at the lane's API front;
// "localstack" is the stack make localstack-deploy deployed.
func TestScenarios(t *testing.T) {
	run := strconv.FormatInt(time.Now().Unix()%1_000_000, 36)
	switch v := os.Getenv(envTarget); v {
	case "localstack":
		c := deployedConfigFromEnv()
		if c.Token == "" {
			require.NotEmpty(t, c.Issuer, "set %s to the JwtIssuer the stack was deployed with (make localstack-test does), or %s", envIssuer, envToken)
		}
		tg, err := newDeployedTarget(t, c)
		require.NoError(t, err)
		runScenarios(t, tg, run)
	case "":
		l := runLane(t, freshTemplate(t))
		u, err := l.loadFunctionURL("stream")
		require.NoError(t, err)
		streams := httptest.NewServer(u)
		t.Cleanup(streams.Close)
		streamToken, err := laneIssuer.token("lane-cli", "cognito:groups", config.DefaultAdminGroup)
		require.NoError(t, err)
		outputs := t.TempDir() + "/outputs.json"
		b, _ := json.Marshal(map[string]map[string]string{"maasflow-dev": {"ApiUrl": l.apiURL + "/", "StreamUrl": streams.URL + "/"}})
		require.NoError(t, os.WriteFile(outputs, b, 0o600))
		tg, err := newDeployedTarget(t, deployedConfig{Outputs: outputs, Endpoint: "http://localhost:4566", Token: laneAdminToken,
			StreamToken: streamToken, SimListen: "127.0.0.1:0", Wait: terminalWait, Poll: 100 * time.Millisecond})
		require.NoError(t, err)
		tg.problems, tg.logs = l.problems, l.functionLogs
		runScenarios(t, tg, run)
		l.requireClean()
	default:
		t.Fatalf("%s=%q: want localstack, or unset for the in-process lane", envTarget, v)
	}
}

// TestDeployedTargetFences: the deployed target refuses an AWS endpoint
// or an API that is not LocalStack's, and a profile or session left in
// the environment.
func TestDeployedTargetFences(t *testing.T) {
	for _, ok := range []string{"http://localhost:4566", "http://127.0.0.1:4566", "https://[::1]:4566", "http://127.1.2.3"} {
		require.NoError(t, loopbackURL(envEndpointURL, ok), ok)
	}
	for _, bad := range []string{"", "https://dynamodb.us-east-1.amazonaws.com", "http://127.0.0.1.nip.io:4566", "http://10.0.0.5:4566",
		"http://localhost:4566/path", "http://user@localhost:4566", "localhost:4566"} {
		require.Error(t, loopbackURL(envEndpointURL, bad), bad)
	}
	for _, ok := range []string{"https://abc123.execute-api.localhost.localstack.cloud:4566/", "http://127.0.0.1:4566/restapis/x"} {
		require.NoError(t, localAPIURL(ok), ok)
	}
	for _, bad := range []string{"https://abc123.execute-api.us-east-1.amazonaws.com/", "https://localstack.cloud.evil.example/"} {
		require.Error(t, localAPIURL(bad), bad)
	}

	outputs := t.TempDir() + "/outputs.json"
	require.NoError(t, os.WriteFile(outputs, []byte(`{"maasflow-dev":{"ApiUrl":"https://abc123.execute-api.us-east-1.amazonaws.com/"}}`), 0o600))
	_, err := newDeployedTarget(t, deployedConfig{Outputs: outputs, Endpoint: "http://localhost:4566", Token: "x", SimListen: "127.0.0.1:0"})
	require.ErrorContains(t, err, "refusing")
	_, err = newDeployedTarget(t, deployedConfig{Outputs: outputs, Endpoint: "https://sts.amazonaws.com", Token: "x", SimListen: "127.0.0.1:0"})
	require.ErrorContains(t, err, "loopback")
	t.Setenv("AWS_PROFILE", "prod")
	_, err = newDeployedTarget(t, deployedConfig{Outputs: outputs, Endpoint: "http://localhost:4566", Token: "x", SimListen: "127.0.0.1:0"})
	require.ErrorContains(t, err, "AWS_PROFILE")
	t.Setenv("AWS_PROFILE", "")
	_, err = newDeployedTarget(t, deployedConfig{Outputs: t.TempDir() + "/none.json", Endpoint: "http://localhost:4566", Token: "x"})
	require.ErrorContains(t, err, "make localstack-deploy")
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestDeployedTargetIssuer: without a token the deployed target serves the
// issuer the stack was deployed with, and its token is one an OpenID
// verifier of that issuer (as the HTTP API's JWT authorizer is) accepts,
// for the stack's audience, with the admin group in cognito:groups.
func TestDeployedTargetIssuer(t *testing.T) {
	outputs := t.TempDir() + "/outputs.json"
	require.NoError(t, os.WriteFile(outputs, []byte(`{"maasflow-dev":{"ApiUrl":"http://127.0.0.1:1/"}}`), 0o600))
	tg, err := newDeployedTarget(t, deployedConfig{Outputs: outputs, Endpoint: "http://localhost:4566",
		IssuerAddr: "127.0.0.1:0", Audience: "maasflow-localstack", SimListen: "127.0.0.1:0"})
	require.NoError(t, err)
	// The issuer named in the token is where it was served.
	unverified, err := jose.ParseSignedCompact(tg.token, []jose.SignatureAlgorithm{jose.RS256})
	require.NoError(t, err)
	var iss struct {
		Issuer string `json:"iss"`
	}
	require.NoError(t, json.Unmarshal(unverified.UnsafePayloadWithoutVerification(), &iss))
	issuerURL := iss.Issuer
	require.True(t, strings.HasPrefix(issuerURL, "http://127.0.0.1:"), issuerURL)

	ctx := oidc.InsecureIssuerURLContext(context.Background(), issuerURL)
	provider, err := oidc.NewProvider(ctx, issuerURL)
	require.NoError(t, err, "the issuer's discovery document")
	tok, err := provider.Verifier(&oidc.Config{ClientID: "maasflow-localstack"}).Verify(ctx, tg.token)
	require.NoError(t, err, "the operator's token verifies against the issuer's JWKS")
	var claims struct {
		Groups   []string `json:"cognito:groups"`
		TokenUse string   `json:"token_use"`
	}
	require.NoError(t, tok.Claims(&claims))
	assert.Equal(t, []string{config.DefaultAdminGroup}, claims.Groups)
	assert.Equal(t, "id", claims.TokenUse)
	_, err = provider.Verifier(&oidc.Config{ClientID: "another-client"}).Verify(ctx, tg.token)
	require.Error(t, err, "another audience is refused")
	assert.Equal(t, "http://127.0.0.1:1", tg.apiURL)
	assert.True(t, tg.sim.allowHTTP)
	assert.True(t, strings.HasPrefix(tg.sim.maasURL, "http://127.0.0.1:"), tg.sim.maasURL)
}
