package enroll

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/nodeid"
)

// These tests run the first-boot payload the way cloud-init on a node runs
// it: write_files first, then every runcmd entry in order through /bin/sh,
// each even when the one before failed. The node is a temporary root
// (MAASFLOW_FIRSTBOOT_ROOT), the site bundle comes from an httptest server on
// 127.0.0.1, the enrollment API and the mutual TLS node listener from
// another pair (nodeAPI) backed by a real node CA, and PATH holds only the
// programs the scripts need plus a stub oras, so a script can reach nothing
// else: no real registry, and every proxy variable points at a closed local
// port for any host other than 127.0.0.1.

// firstbootTools are the programs the scripts and the test's stubs call
// besides /bin/sh and shell builtins (Debian: python3, coreutils, curl,
// openssl; .ci/run installs them).
var firstbootTools = []string{"python3", "mkdir", "rm", "touch", "cp", "curl", "openssl"}

const (
	testSiteVersion = "site-2026.11.1"
	siteBundlePath  = "/site/launcher.sh"
	siteTag         = "maasflow: site-bootstrap " + testSiteVersion
	nodeTag         = "maasflow: node-bootstrap " + BundleVersion
	nodeSkipped     = "maasflow: node-bootstrap skipped: site-bootstrap did not succeed\n"
)

// requireTool fails under CI=true, where every test must run, and skips with
// the reason elsewhere.
func requireTool(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("first-boot scripts cannot run: %s", msg)
	}
	t.Skipf("first-boot scripts cannot run: %s", msg)
}

// toolDir builds a directory of links to exactly firstbootTools. python3 is
// linked to the interpreter itself (sys.executable), not to a wrapper such as
// a pyenv shim that would need more of the host's PATH.
func toolDir(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		requireTool(t, "/bin/sh (cloud-init runs each runcmd entry with it): %v", err)
	}
	dir := t.TempDir()
	for _, tool := range firstbootTools {
		path, err := exec.LookPath(tool)
		if err != nil {
			requireTool(t, "%s is not on PATH (Debian: python3, coreutils, curl, openssl)", tool)
		}
		if tool == "python3" {
			out, err := exec.CommandContext(t.Context(), path, "-c", "import sys; print(sys.executable)").Output() //nolint:gosec // G204: the python3 found on PATH, by design
			if err != nil {
				requireTool(t, "python3 does not run: %v", err)
			}
			path = strings.TrimSpace(string(out))
		}
		require.NoError(t, os.Symlink(path, filepath.Join(dir, tool)))
	}
	return dir
}

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
	api, node  *httptest.Server
	ca         *nodeid.CA
	refuse     int // when not 0, enrollment answers this status
	mu         sync.Mutex
	enrolls    int
	heartbeats []string // the node ids the certificates named
}

// nodeAPIRecovery is the recovery token nodeAPI answers.
const nodeAPIRecovery = "RECOVERYxq7Zr2VwLk9PmN4tB8yHc3dFgJ5sA1eU6Tk"

func newNodeAPI(t *testing.T, refuse int) *nodeAPI {
	t.Helper()
	ca, err := nodeid.LoadOrCreateLocal(t.TempDir(), time.Now())
	require.NoError(t, err)
	a := &nodeAPI{ca: ca, refuse: refuse}
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

// installerScript is an install-node-agent.sh that records its argument and
// GPUAAS_NODE_AGENT_ENV_FILE, then exits with status.
func installerScript(status int) string {
	return `#!/bin/sh
printf '%s\n' "$@" "$GPUAAS_NODE_AGENT_ENV_FILE" >"$MAASFLOW_FIRSTBOOT_ROOT/installer.args"
exit ` + strconv.Itoa(status) + "\n"
}

// node is one temporary node root with the tools, the stub oras and the
// package it "pulls".
type node struct {
	root  string
	tools string
}

func newNode(t *testing.T, orasStatus, installerStatus int) *node {
	t.Helper()
	n := &node{root: t.TempDir(), tools: toolDir(t)}
	require.NoError(t, os.MkdirAll(filepath.Join(n.root, "tmp"), 0o750))
	pkg := filepath.Join(n.root, "registry", "install-node-agent.sh")
	require.NoError(t, os.MkdirAll(filepath.Dir(pkg), 0o750))
	require.NoError(t, os.WriteFile(pkg, []byte(installerScript(installerStatus)), 0o700)) //nolint:gosec // G306: an executable stub in t.TempDir
	// The stub oras copies the package into --output, never touching a network.
	oras := fmt.Sprintf(`#!/bin/sh
printf '%%s\n' "$@" >"$MAASFLOW_FIRSTBOOT_ROOT/oras.args"
[ "$1" = pull ] && [ "$2" = --output ] || exit 64
cp %q "$3/install-node-agent.sh"
exit %d
`, pkg, orasStatus)
	require.NoError(t, os.WriteFile(filepath.Join(n.tools, "oras"), []byte(oras), 0o700)) //nolint:gosec // G306: an executable stub in t.TempDir
	return n
}

func (n *node) path(p string) string { return filepath.Join(n.root, p) }

func (n *node) env() []string {
	const deadProxy = "http://127.0.0.1:9"
	return []string{
		"PATH=" + n.tools,
		"HOME=" + n.root,
		"TMPDIR=" + n.path("tmp"),
		"LC_ALL=C",
		"MAASFLOW_FIRSTBOOT_ROOT=" + n.root,
		"MAASFLOW_FIRSTBOOT_BACKOFF=0.01",
		"http_proxy=" + deadProxy, "https_proxy=" + deadProxy, "all_proxy=" + deadProxy,
		"HTTP_PROXY=" + deadProxy, "HTTPS_PROXY=" + deadProxy, "ALL_PROXY=" + deadProxy,
		"no_proxy=127.0.0.1", "NO_PROXY=127.0.0.1",
	}
}

// stepResult is what one runcmd entry printed and its exit status.
type stepResult struct {
	stdout, stderr string
	status         int
}

// boot plays cloud-init on userData: it writes every write_files entry with
// its permissions, then runs every runcmd entry, and returns their results.
// rewriteBundle, when set, edits the node bundle JSON before it is written
// (to check what the node bootstrap itself refuses).
func (n *node) boot(t *testing.T, userData []byte, rewriteBundle func(map[string]any)) []stepResult {
	t.Helper()
	var cc cloudConfig
	require.NoError(t, yaml.Unmarshal(userData, &cc))
	for _, f := range cc.WriteFiles {
		content, err := base64.StdEncoding.DecodeString(f.Content)
		require.NoError(t, err)
		if f.Path == NodeBundlePath && rewriteBundle != nil {
			var m map[string]any
			require.NoError(t, json.Unmarshal(content, &m))
			rewriteBundle(m)
			content, err = json.Marshal(m)
			require.NoError(t, err)
		}
		mode, err := strconv.ParseUint(f.Permissions, 8, 32)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(n.path(f.Path)), 0o750))
		require.NoError(t, os.WriteFile(n.path(f.Path), content, fs.FileMode(mode)))
		require.NoError(t, os.Chmod(n.path(f.Path), fs.FileMode(mode)))
	}
	results := make([]stepResult, 0, len(cc.RunCmd))
	for _, argv := range cc.RunCmd {
		require.NotEmpty(t, argv)
		cmd := exec.CommandContext(t.Context(), argv[0], argv[1:]...) //nolint:gosec // G204: running the rendered runcmd entries is what this test is for
		cmd.Dir = n.root
		cmd.Env = n.env()
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		status := 0
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			status = exit.ExitCode()
		case err != nil:
			t.Fatalf("run %s: %v", argv[0], err)
		}
		results = append(results, stepResult{stdout: stdout.String(), stderr: stderr.String(), status: status})
	}
	require.Len(t, results, 2, "the payload runs the site launcher, then the node bootstrap")
	return results
}

func (n *node) exists(p string) bool {
	_, err := os.Stat(n.path(p))
	return err == nil
}

func (n *node) lines(t *testing.T, p string) []string {
	t.Helper()
	raw, err := os.ReadFile(n.path(p))
	require.NoError(t, err, p)
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

func (n *node) mode(t *testing.T, p string) fs.FileMode {
	t.Helper()
	info, err := os.Stat(n.path(p))
	require.NoError(t, err, p)
	return info.Mode().Perm()
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
			n := newNode(t, 0, 0)
			if mode == PullPreloaded {
				// The site bootstrap placed the package already.
				require.NoError(t, os.MkdirAll(n.path(DefaultInstallRoot), 0o750))
				//nolint:gosec // G306: the preloaded installer must be executable; it lives in t.TempDir
				require.NoError(t, os.WriteFile(n.path(DefaultInstallRoot+"/install-node-agent.sh"), []byte(installerScript(0)), 0o700))
			}
			api := newNodeAPI(t, 0)
			ud := render(t, srv.URL+siteBundlePath, sha256Hex(body), mode, api.api.URL)

			res := n.boot(t, ud, nil)

			// Site launcher: one fetch, verified, run with the reference file
			// and its version, marker left for the node bootstrap.
			assert.Equal(t, []string{"GET " + siteBundlePath}, srv.seen())
			assert.Equal(t, stepResult{stdout: siteTag + " ok\n"}, res[0])
			assert.Equal(t, []string{n.path(SiteBootstrapPath)}, n.lines(t, "site-bundle.args"))
			assert.Equal(t, []string{testSiteVersion}, n.lines(t, "site-bundle.version"))
			assert.True(t, n.exists(siteOKMarker))
			for _, p := range []string{SiteBootstrapPath, NodeBundlePath} {
				assert.Equal(t, fs.FileMode(0o600), n.mode(t, p), p)
			}

			// Node bootstrap: CA installed, the node's key made on the node
			// and certified through a CSR, the node CA beside it, env file
			// 0600 with the bundle's own paths and the recovery token in place
			// of the spent enrollment token, package pulled by digest
			// (anonymous) or not at all (preloaded), installer run with the
			// env file, then one heartbeat over mutual TLS.
			assert.Equal(t, stepResult{stdout: nodeTag + " ok\n"}, res[1])
			for p, want := range map[string]string{DefaultCABundlePath: testCA(t), DefaultNodeCertCABundlePath: api.ca.CertPEM()} {
				raw, err := os.ReadFile(n.path(p))
				require.NoError(t, err)
				assert.Equal(t, want, string(raw), p)
				assert.Equal(t, fs.FileMode(0o644), n.mode(t, p), "a CA bundle is public")
			}
			assert.Equal(t, fs.FileMode(0o600), n.mode(t, DefaultKeyPath), "the node key is root's only")
			assert.Equal(t, fs.FileMode(0o644), n.mode(t, DefaultCertPath))
			pair, err := tls.LoadX509KeyPair(n.path(DefaultCertPath), n.path(DefaultKeyPath))
			require.NoError(t, err, "the certificate is over the key made on the node")
			id, ok := nodeid.NodeIDOf(pair.Leaf)
			assert.True(t, ok)
			assert.Equal(t, "node-7f3a", id)
			enrolls, heartbeats := api.seen()
			assert.Equal(t, 1, enrolls)
			assert.Equal(t, []string{"node-7f3a"}, heartbeats, "one heartbeat with the node's certificate")
			assert.Equal(t, fs.FileMode(0o600), n.mode(t, DefaultEnvFilePath))
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
			}, n.lines(t, DefaultEnvFilePath))
			if mode == PullAnonymous {
				assert.Equal(t, []string{"pull", "--output", n.path(DefaultInstallRoot), pkg.OCIRef + "@" + pkg.Digest},
					n.lines(t, "oras.args"))
			} else {
				assert.False(t, n.exists("oras.args"), "a preloaded package is not pulled")
			}
			envFile := n.path(DefaultEnvFilePath)
			assert.Equal(t, []string{envFile, envFile}, n.lines(t, "installer.args"))

			for i, r := range res {
				assert.NotContains(t, r.stdout+r.stderr, seedToken, "runcmd %d must not print the token", i)
				assert.NotContains(t, r.stdout+r.stderr, nodeAPIRecovery, "runcmd %d must not print the recovery token", i)
			}
		})
	}
}

func TestFirstBootSiteFetchRetries(t *testing.T) {
	body := siteBundle(0)
	srv := newSiteServer(t, body, http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusOK)
	n := newNode(t, 0, 0)

	res := n.boot(t, render(t, srv.URL+siteBundlePath, sha256Hex(body), PullAnonymous, newNodeAPI(t, 0).api.URL), nil)

	assert.Len(t, srv.seen(), 3, "two failed fetches, then the bundle")
	assert.Equal(t, stepResult{stdout: siteTag + " ok\n"}, res[0])
	assert.Equal(t, stepResult{stdout: nodeTag + " ok\n"}, res[1])
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
			n := newNode(t, 0, 0)

			api := newNodeAPI(t, 0)

			res := n.boot(t, render(t, siteURL, tt.sum, PullAnonymous, api.api.URL), nil)

			assert.Len(t, srv.seen(), tt.wantFetch)
			assert.Equal(t, stepResult{stderr: siteTag + " failed: " + tt.wantReason + "\n", status: 1}, res[0])
			assert.Equal(t, tt.bundleRan, n.exists("site-bundle.args"), "site bundle run")
			assert.False(t, n.exists(siteOKMarker), "no success marker after a failure")

			assert.Equal(t, stepResult{stderr: nodeSkipped, status: 1}, res[1])
			assert.False(t, n.exists(DefaultEnvFilePath), "no token on disk when the site part failed")
			assert.False(t, n.exists("oras.args"), "no package pull when the site part failed")
			assert.False(t, n.exists("installer.args"))
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
			n := newNode(t, tt.orasStatus, tt.installerStatus)
			api := newNodeAPI(t, tt.refuse)

			res := n.boot(t, render(t, srv.URL+siteBundlePath, sha256Hex(body), PullAnonymous, api.api.URL), tt.rewrite)

			assert.Equal(t, stepResult{stdout: siteTag + " ok\n"}, res[0])
			tag := nodeTag
			if tt.wantTag != "" {
				tag = tt.wantTag
			}
			assert.Equal(t, stepResult{stderr: tag + " failed: " + tt.wantReason + "\n", status: 1}, res[1])
			assert.Equal(t, tt.wantEnvFile, n.exists(DefaultEnvFilePath))
			if tt.wantEnvFile {
				assert.Equal(t, fs.FileMode(0o600), n.mode(t, DefaultEnvFilePath))
			}
			assert.NotContains(t, res[1].stdout+res[1].stderr, seedToken)
			_, heartbeats := api.seen()
			assert.Empty(t, heartbeats, "no heartbeat when the node part failed")
		})
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
