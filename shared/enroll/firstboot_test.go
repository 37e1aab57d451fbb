package enroll

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll/enrolltest"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// These tests run the first-boot payload the way cloud-init on a node runs
// it (enrolltest.Node): the site bundle comes from an httptest server on
// 127.0.0.1, the enrollment API and the mutual TLS node listener from
// another pair (nodeAPI) backed by a real node CA. The local stack's tests
// run it against the real API and node listener.

const (
	testSiteVersion = "site-2026.11.1"
	siteBundlePath  = "/site/launcher.sh"
	siteTag         = "maasflow: site-bootstrap " + testSiteVersion
	nodeTag         = "maasflow: node-bootstrap " + BundleVersion
	nodeSkipped     = "maasflow: node-bootstrap skipped: site-bootstrap did not succeed\n"
)

// siteServer serves the site bundle. statuses are answered in order, one per
// request, and the last one repeats; 200 serves body.
type siteServer struct {
	*httptest.Server
	mu       sync.Mutex
	body     []byte
	statuses []int
	requests []string
}

func newSiteServer(t *testing.T, body []byte, statuses ...int) *siteServer {
	t.Helper()
	if len(statuses) == 0 {
		statuses = []int{http.StatusOK}
	}
	s := &siteServer{body: body, statuses: statuses}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		status := s.statuses[min(len(s.requests), len(s.statuses)-1)]
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		if status != http.StatusOK {
			http.Error(w, "unavailable", status)
			return
		}
		_, _ = w.Write(s.body)
	}))
	t.Cleanup(s.Close)
	u, err := url.Parse(s.URL)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", u.Hostname(), "the site bundle must be served from 127.0.0.1 only")
	return s
}

func (s *siteServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// nodeAPI is the enrollment API and the node listener a node enrolls with:
// enrollment with the seed token and a CSR answers a certificate of a real
// node CA, and the node listener (mutual TLS, as local mode's) counts the
// heartbeats of a certificate naming the node.
type nodeAPI struct {
	api, node *httptest.Server
	ca        *nodeid.CA
	refuse    int // when not 0, enrollment answers this status
	// uncertified answers enrollment without a certificate, as a
	// deployment without a node CA does.
	uncertified bool
	mu          sync.Mutex
	enrolls     int
	heartbeats  []string // the node ids the certificates named
}

// nodeAPIRecovery is the recovery token nodeAPI answers.
const nodeAPIRecovery = "RECOVERYxq7Zr2VwLk9PmN4tB8yHc3dFgJ5sA1eU6Tk"

func newNodeAPI(t *testing.T, refuse int) *nodeAPI {
	t.Helper()
	return startNodeAPI(t, &nodeAPI{refuse: refuse})
}

func startNodeAPI(t *testing.T, a *nodeAPI) *nodeAPI {
	t.Helper()
	ca, err := nodeid.LoadOrCreateLocal(t.TempDir(), time.Now())
	require.NoError(t, err)
	a.ca = ca
	a.node = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _, err := ca.Verify(r.TLS.PeerCertificates, time.Now())
		if err != nil || r.URL.Path != "/node/v1/nodes/"+id+"/tasks/wait" {
			http.Error(w, `{"error":{"code":"node_cert_missing"}}`, http.StatusUnauthorized)
			return
		}
		a.mu.Lock()
		a.heartbeats = append(a.heartbeats, id)
		a.mu.Unlock()
		_, _ = w.Write([]byte(`{"tasks":[]}`))
	}))
	cert, err := ca.IssueServer("127.0.0.1", time.Now())
	require.NoError(t, err)
	a.node.TLS = nodeid.ServerTLSConfig(cert)
	a.node.StartTLS()
	t.Cleanup(a.node.Close)
	a.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Token, CSR string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Token != seedToken || a.refuse != 0 {
			w.WriteHeader(cmp.Or(a.refuse, http.StatusUnauthorized))
			_, _ = w.Write([]byte(`{"error":{"code":"token_rejected"}}`))
			return
		}
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/nodes/"), "/enroll")
		if a.uncertified {
			a.mu.Lock()
			a.enrolls++
			a.mu.Unlock()
			_ = json.NewEncoder(w).Encode(map[string]any{"node_id": id, "status": "active"})
			return
		}
		issued, err := ca.Issue(in.CSR, id, time.Now())
		if err != nil {
			http.Error(w, `{"error":{"code":"invalid_request"}}`, http.StatusBadRequest)
			return
		}
		a.mu.Lock()
		a.enrolls++
		a.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"node_id": id, "status": "active", "certificate_pem": issued.CertPEM,
			"ca_pem": ca.CertPEM(), "recovery_token": nodeAPIRecovery, "node_api_url": a.node.URL})
	}))
	t.Cleanup(a.api.Close)
	return a
}

func (a *nodeAPI) seen() (int, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.enrolls, slices.Clone(a.heartbeats)
}

// siteBundle is a site bootstrap that records its arguments and version, then
// exits with status.
func siteBundle(status int) []byte {
	return []byte(`#!/bin/sh
printf '%s\n' "$@" >"$MAASFLOW_FIRSTBOOT_ROOT/site-bundle.args"
printf '%s\n' "$MAASFLOW_SITE_BOOTSTRAP_VERSION" >"$MAASFLOW_FIRSTBOOT_ROOT/site-bundle.version"
exit ` + strconv.Itoa(status) + "\n")
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// render renders the payload for a node whose site bundle lives at siteURL
// and must hash to sum.
func render(t *testing.T, siteURL, sum, pullMode, apiURL string) []byte {
	t.Helper()
	in := validInput(t)
	in.Package.PullDeliveryMode = pullMode
	in.APIURL = apiURL
	b, err := NewBundle(in)
	require.NoError(t, err)
	ud, err := RenderUserData(domainSite(siteURL, sum), b)
	require.NoError(t, err)
	return ud
}

func domainSite(siteURL, sum string) domain.BootstrapRef {
	site := validSite()
	site.URL, site.SHA256, site.Version = siteURL, sum, testSiteVersion
	return site
}

func TestFirstBootSucceeds(t *testing.T) {
	for _, mode := range []string{PullAnonymous, PullPreloaded} {
		t.Run(mode, func(t *testing.T) {
			body := siteBundle(0)
			srv := newSiteServer(t, body)
			n := enrolltest.NewNode(t, 0, 0)
			if mode == PullPreloaded {
				// The site bootstrap placed the package already.
				require.NoError(t, os.MkdirAll(n.Path(DefaultInstallRoot), 0o750))
				//nolint:gosec // G306: the preloaded installer must be executable; it lives in t.TempDir
				require.NoError(t, os.WriteFile(n.Path(DefaultInstallRoot+"/install-node-agent.sh"), []byte(enrolltest.InstallerScript(0)), 0o700))
			}
			api := newNodeAPI(t, 0)
			ud := render(t, srv.URL+siteBundlePath, sha256Hex(body), mode, api.api.URL)

			res := n.Boot(t, ud, nil)

			// Site launcher: one fetch, verified, run with the reference file
			// and its version, marker left for the node bootstrap.
			assert.Equal(t, []string{"GET " + siteBundlePath}, srv.seen())
			assert.Equal(t, enrolltest.StepResult{Stdout: siteTag + " ok\n"}, res[0])
			assert.Equal(t, []string{n.Path(SiteBootstrapPath)}, n.Lines(t, "site-bundle.args"))
			assert.Equal(t, []string{testSiteVersion}, n.Lines(t, "site-bundle.version"))
			assert.True(t, n.Exists(siteOKMarker))
			for _, p := range []string{SiteBootstrapPath, NodeBundlePath} {
				assert.Equal(t, fs.FileMode(0o600), n.Mode(t, p), p)
			}

			// Node bootstrap: CA installed, the node's key made on the node
			// and certified through a CSR, the node CA beside it, env file
			// 0600 with the bundle's own paths and the recovery token in place
			// of the spent enrollment token, package pulled by digest
			// (anonymous) or not at all (preloaded), installer run with the
			// env file, then one heartbeat over mutual TLS.
			assert.Equal(t, enrolltest.StepResult{Stdout: nodeTag + " ok\n"}, res[1])
			for p, want := range map[string]string{DefaultCABundlePath: testCA(t), DefaultNodeCertCABundlePath: api.ca.CertPEM()} {
				raw, err := os.ReadFile(n.Path(p))
				require.NoError(t, err)
				assert.Equal(t, want, string(raw), p)
				assert.Equal(t, fs.FileMode(0o644), n.Mode(t, p), "a CA bundle is public")
			}
			assert.Equal(t, fs.FileMode(0o600), n.Mode(t, DefaultKeyPath), "the node key is root's only")
			assert.Equal(t, fs.FileMode(0o644), n.Mode(t, DefaultCertPath))
			pair, err := tls.LoadX509KeyPair(n.Path(DefaultCertPath), n.Path(DefaultKeyPath))
			require.NoError(t, err, "the certificate is over the key made on the node")
			id, ok := nodeid.NodeIDOf(pair.Leaf)
			assert.True(t, ok)
			assert.Equal(t, "node-7f3a", id)
			enrolls, heartbeats := api.seen()
			assert.Equal(t, 1, enrolls)
			assert.Equal(t, []string{"node-7f3a"}, heartbeats, "one heartbeat with the node's certificate")
			assert.Equal(t, fs.FileMode(0o600), n.Mode(t, DefaultEnvFilePath))
			pkg := DevPackage()
			assert.Equal(t, []string{
				"GPUAAS_API_URL=" + api.api.URL,
				"GPUAAS_CA_BUNDLE_PATH=" + DefaultCABundlePath,
				"GPUAAS_CERT_PATH=" + DefaultCertPath,
				"GPUAAS_ENROLLMENT_TOKEN=" + nodeAPIRecovery,
				"GPUAAS_KEY_PATH=" + DefaultKeyPath,
				"GPUAAS_NODE_AGENT_ENV_FILE=" + DefaultEnvFilePath,
				"GPUAAS_NODE_AGENT_INSTALL_ROOT=" + DefaultInstallRoot,
				"GPUAAS_NODE_AGENT_SYSTEMD_UNIT=" + DefaultSystemdUnitName,
				"GPUAAS_NODE_API_URL=" + api.node.URL,
				"GPUAAS_NODE_CERT_CA_BUNDLE_PATH=" + DefaultNodeCertCABundlePath,
				"GPUAAS_NODE_ID=node-7f3a",
				"GPUAAS_TASK_SIGNING_PUBKEYS=ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIK0,ed25519:AAAAC3NzaC1lZDI1NTE5AAAAIK1",
			}, n.Lines(t, DefaultEnvFilePath))
			if mode == PullAnonymous {
				assert.Equal(t, []string{"pull", "--output", n.Path(DefaultInstallRoot), pkg.OCIRef + "@" + pkg.Digest},
					n.Lines(t, "oras.args"))
			} else {
				assert.False(t, n.Exists("oras.args"), "a preloaded package is not pulled")
			}
			envFile := n.Path(DefaultEnvFilePath)
			assert.Equal(t, []string{envFile, envFile}, n.Lines(t, "installer.args"))

			for i, r := range res {
				assert.NotContains(t, r.Stdout+r.Stderr, seedToken, "runcmd %d must not print the token", i)
				assert.NotContains(t, r.Stdout+r.Stderr, nodeAPIRecovery, "runcmd %d must not print the recovery token", i)
			}
		})
	}
}

func TestFirstBootSiteFetchRetries(t *testing.T) {
	body := siteBundle(0)
	srv := newSiteServer(t, body, http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusOK)
	n := enrolltest.NewNode(t, 0, 0)

	res := n.Boot(t, render(t, srv.URL+siteBundlePath, sha256Hex(body), PullAnonymous, newNodeAPI(t, 0).api.URL), nil)

	assert.Len(t, srv.seen(), 3, "two failed fetches, then the bundle")
	assert.Equal(t, enrolltest.StepResult{Stdout: siteTag + " ok\n"}, res[0])
	assert.Equal(t, enrolltest.StepResult{Stdout: nodeTag + " ok\n"}, res[1])
}

// TestFirstBootWithoutANodeCA: a deployment without a node CA enrolls the
// node without a certificate; the node bootstrap then installs the agent
// and sends no heartbeat (the enrollment completed the wait), and keeps no
// spent token.
func TestFirstBootWithoutANodeCA(t *testing.T) {
	body := siteBundle(0)
	srv := newSiteServer(t, body)
	n := enrolltest.NewNode(t, 0, 0)
	api := startNodeAPI(t, &nodeAPI{uncertified: true})

	res := n.Boot(t, render(t, srv.URL+siteBundlePath, sha256Hex(body), PullAnonymous, api.api.URL), nil)

	assert.Equal(t, enrolltest.StepResult{Stdout: nodeTag + " ok\n"}, res[1])
	enrolls, heartbeats := api.seen()
	assert.Equal(t, 1, enrolls)
	assert.Empty(t, heartbeats)
	assert.False(t, n.Exists(DefaultCertPath), "no certificate was issued")
	assert.Contains(t, n.Lines(t, DefaultEnvFilePath), "GPUAAS_ENROLLMENT_TOKEN=", "the spent token is not kept")
	assert.True(t, n.Exists("installer.args"), "the agent is installed")
}

// TestFirstBootSiteFailures: whenever the site part fails, the site launcher
// says why, leaves no marker, and the node bootstrap refuses to start, so no
// token reaches disk.
func TestFirstBootSiteFailures(t *testing.T) {
	good := siteBundle(0)
	closed := closedURL(t)
	tests := []struct {
		name string
		// serve is the bundle the server sends and the statuses it answers.
		serve    []byte
		statuses []int
		// url overrides the server's URL; sum is the sha256 the payload pins.
		url, sum   string
		wantFetch  int
		wantReason string
		bundleRan  bool
	}{
		{name: "bad sha256", serve: good, sum: sha256Hex([]byte("another bundle")),
			wantFetch: 1, wantReason: "sha256 mismatch"},
		{name: "unreachable url", serve: good, url: closed, sum: sha256Hex(good),
			wantReason: "fetch: URLError"},
		{name: "server keeps failing", serve: good, statuses: []int{http.StatusInternalServerError}, sum: sha256Hex(good),
			wantFetch: 5, wantReason: "fetch: HTTPError"},
		{name: "site bootstrap fails", serve: siteBundle(3), sum: sha256Hex(siteBundle(3)),
			wantFetch: 1, wantReason: "launcher exit status 3", bundleRan: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newSiteServer(t, tt.serve, tt.statuses...)
			siteURL := srv.URL + siteBundlePath
			if tt.url != "" {
				siteURL = tt.url
			}
			n := enrolltest.NewNode(t, 0, 0)

			api := newNodeAPI(t, 0)

			res := n.Boot(t, render(t, siteURL, tt.sum, PullAnonymous, api.api.URL), nil)

			assert.Len(t, srv.seen(), tt.wantFetch)
			assert.Equal(t, enrolltest.StepResult{Stderr: siteTag + " failed: " + tt.wantReason + "\n", Status: 1}, res[0])
			assert.Equal(t, tt.bundleRan, n.Exists("site-bundle.args"), "site bundle run")
			assert.False(t, n.Exists(siteOKMarker), "no success marker after a failure")

			assert.Equal(t, enrolltest.StepResult{Stderr: nodeSkipped, Status: 1}, res[1])
			assert.False(t, n.Exists(DefaultEnvFilePath), "no token on disk when the site part failed")
			assert.False(t, n.Exists("oras.args"), "no package pull when the site part failed")
			assert.False(t, n.Exists("installer.args"))
			enrolls, _ := api.seen()
			assert.Zero(t, enrolls, "no enrollment when the site part failed")
		})
	}
}

// TestFirstBootNodeFailures: the site part succeeded, the node part says
// which of its steps failed.
func TestFirstBootNodeFailures(t *testing.T) {
	tests := []struct {
		name                        string
		orasStatus, installerStatus int
		refuse                      int
		rewrite                     func(map[string]any)
		wantTag, wantReason         string
		wantEnvFile                 bool
	}{
		{name: "enrollment refused", refuse: http.StatusUnauthorized, wantReason: "enrollment answered 401 token_rejected"},
		{name: "package pull fails", orasStatus: 1, wantReason: "package pull exit status 1", wantEnvFile: true},
		{name: "installer fails", installerStatus: 4, wantReason: "install-node-agent.sh exit status 4", wantEnvFile: true},
		{name: "ca fingerprint does not match", rewrite: func(m map[string]any) {
			m["ca_fingerprint"] = strings.Repeat("AB:", 31) + "AB"
		}, wantReason: "ca_fingerprint does not match ca_bundle_pem"},
		{name: "unsupported bundle version", rewrite: func(m map[string]any) {
			m["bundle_version"] = "node-bootstrap/v0"
		}, wantTag: "maasflow: node-bootstrap node-bootstrap/v0", wantReason: "unsupported bundle version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := siteBundle(0)
			srv := newSiteServer(t, body)
			n := enrolltest.NewNode(t, tt.orasStatus, tt.installerStatus)
			api := newNodeAPI(t, tt.refuse)

			res := n.Boot(t, render(t, srv.URL+siteBundlePath, sha256Hex(body), PullAnonymous, api.api.URL), rewriteBundle(t, tt.rewrite))

			assert.Equal(t, enrolltest.StepResult{Stdout: siteTag + " ok\n"}, res[0])
			tag := nodeTag
			if tt.wantTag != "" {
				tag = tt.wantTag
			}
			assert.Equal(t, enrolltest.StepResult{Stderr: tag + " failed: " + tt.wantReason + "\n", Status: 1}, res[1])
			assert.Equal(t, tt.wantEnvFile, n.Exists(DefaultEnvFilePath))
			if tt.wantEnvFile {
				assert.Equal(t, fs.FileMode(0o600), n.Mode(t, DefaultEnvFilePath))
			}
			assert.NotContains(t, res[1].Stdout+res[1].Stderr, seedToken)
			_, heartbeats := api.seen()
			assert.Empty(t, heartbeats, "no heartbeat when the node part failed")
		})
	}
}

// rewriteBundle is a Boot rewrite that edits the node bundle JSON with
// edit (none when edit is nil).
func rewriteBundle(t *testing.T, edit func(map[string]any)) func(string, []byte) []byte {
	t.Helper()
	if edit == nil {
		return nil
	}
	return func(path string, content []byte) []byte {
		if path != NodeBundlePath {
			return content
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(content, &m))
		edit(m)
		out, err := json.Marshal(m)
		require.NoError(t, err)
		return out
	}
}

// closedURL is an http URL on 127.0.0.1 where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr + siteBundlePath
}

// TestScriptsMatchGoConstants pins the values the scripts spell out to the Go
// side that renders and parses the payload.
func TestScriptsMatchGoConstants(t *testing.T) {
	assert.Contains(t, siteLauncher, `"$root`+SiteBootstrapPath+`"`)
	assert.Contains(t, siteLauncher, `"$root`+siteOKMarker+`"`)
	assert.Contains(t, nodeBootstrap, `"$root`+NodeBundlePath+`"`)
	assert.Contains(t, nodeBootstrap, `"$root`+siteOKMarker+`"`)
	assert.Contains(t, nodeBootstrap, `b.get("bundle_version") != "`+BundleVersion+`"`)
	assert.Contains(t, nodeBootstrap, `pkg["pull_delivery_mode"] == "`+PullAnonymous+`"`)
	for name, s := range map[string]string{"site launcher": siteLauncher, "node bootstrap": nodeBootstrap} {
		assert.True(t, strings.HasPrefix(s, "set -eu\n"), "%s: the payload starts at the first command, without the header comments", name)
		assert.False(t, strings.HasSuffix(s, "\n"), name)
		assert.NotContains(t, s, "shellcheck", name)
	}
}
