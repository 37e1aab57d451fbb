package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/localstack"
)

var (
	buildOnce sync.Once
	binary    string
	errBuild  error
	buildLog  []byte
)

// maasflowBinary builds cmd/maasflow once per test run into a temporary
// directory, so the test drives the same binary an operator runs.
func maasflowBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		msg := "the go tool is not on PATH: the connector e2e test builds cmd/maasflow"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "maasflow-e2e-")
		if err != nil {
			errBuild = err
			return
		}
		binary = filepath.Join(dir, "maasflow")
		cmd := exec.Command(goTool, "build", "-o", binary, "github.com/maasflow/maasflow/cmd/maasflow") //nolint:gosec,noctx // G204: the go tool from PATH building this module
		buildLog, errBuild = cmd.CombinedOutput()
	})
	require.NoError(t, errBuild, "go build: %s", buildLog)
	return binary
}

// startConnector runs `maasflow connector` for site in front of the
// simulator, with the simulator's API key kept in the connector's own
// key file, and waits for its banner. With aws set it uses the SQS and
// DynamoDB transport on LocalStack, else the local long-poll endpoint.
func (e *env) startConnector(site string, aws *awsTransport) *syncBuffer {
	e.t.Helper()
	bin := maasflowBinary(e.t)
	dir := e.t.TempDir()
	keyFile := filepath.Join(dir, "maas.key")
	require.NoError(e.t, os.WriteFile(keyFile, []byte(e.stack.SimAPIKey+"\n"), 0o600))
	args := []string{"connector", "--site", site, "--maas-url", e.stack.SimURL, "--maas-api-key-file", keyFile,
		"--state-dir", filepath.Join(dir, "state"), "--log-level", "debug"}
	environ := os.Environ()
	if aws != nil {
		args = append(args, "--queue-url", aws.queueFor(e.t, site), "--table", aws.table)
		environ = append(environ, aws.environ()...)
	} else {
		tokenOut := e.call("GET", e.stack.APIURL+"/_connector/v1/token?site="+site, e.stack.AdminToken, nil, http.StatusOK)
		token, _ := tokenOut["token"].(string)
		require.NotEmpty(e.t, token)
		args = append(args, "--endpoint", e.stack.APIURL)
		environ = append(environ, "MAASFLOW_CONNECTOR_TOKEN="+token)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...) //nolint:gosec // G204: the binary this test just built
	cmd.Env = environ
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	logs := &syncBuffer{}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	require.NoError(e.t, err)
	require.NoError(e.t, cmd.Start())
	e.t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if e.t.Failed() {
			e.t.Logf("connector log:\n%s", logs.String())
		}
	})
	banner := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			banner <- sc.Text()
		}
		close(banner)
	}()
	select {
	case line := <-banner:
		require.Contains(e.t, line, "maasflow connector ", "banner")
		require.Contains(e.t, line, "site "+site)
	case <-time.After(30 * time.Second):
		e.t.Fatalf("the connector did not start: %s", logs.String())
	}
	return logs
}

// TestOnboardingThroughTheSiteConnector onboards a simulated host with
// every MAAS call and pre-deploy fetch going through a real `maasflow
// connector` process that keeps the MAAS API key: maasflow never holds it.
//
// With $MAASFLOW_LOCALSTACK_URL set (make localstack-up), the same test
// runs the AWS transport: SQS request queue and DynamoDB reply table on
// LocalStack, the connector process using them with the AWS SDK.
func TestOnboardingThroughTheSiteConnector(t *testing.T) {
	t.Parallel()
	aws := localStackTransport(t)
	var e *env
	if aws != nil {
		e = startStackConfigured(t, localstack.Config{ConnectorRelay: aws.relay})
	} else {
		e = startStack(t)
	}
	policy := map[string]any{"bootstrap": e.stack.SiteBootstrap}
	site := e.admin("POST", "/api/v1/admin/maas-sites", map[string]any{
		"name": "edge-1", "maas_url": e.stack.SimURL, "policy": policy, "connectivity": "connector",
	}, http.StatusCreated)
	siteID := site["id"].(string)
	assert.Equal(t, "connector", site["connectivity"])
	bmcPassword := "bmc-pass-" + fmt.Sprint(time.Now().UnixNano())
	e.admin("POST", "/api/v1/admin/maas-sites/"+siteID+"/credentials", map[string]any{
		"bmc_username": "maasflow", "bmc_password": bmcPassword,
	}, http.StatusOK)

	// Without a connector the probe reports it offline and fails.
	probe := e.admin("POST", "/api/v1/admin/maas-sites/"+siteID+"/probe", nil, http.StatusOK)
	assert.Equal(t, false, probe["healthy"])
	conn, _ := probe["connector"].(map[string]any)
	assert.Equal(t, false, conn["online"], "probe: %v", probe)
	assert.Contains(t, probe["error"], "never reported")

	connLogs := e.startConnector(siteID, aws)
	probe = e.waitProbe(siteID)
	conn, _ = probe["connector"].(map[string]any)
	require.NotNil(t, conn, "probe: %v", probe)
	assert.Equal(t, true, conn["online"])
	assert.NotEmpty(t, conn["version"], "the connector's version")
	assert.NotEmpty(t, conn["last_heartbeat"])
	assert.NotEmpty(t, probe["version"], "MAAS answered through the connector")

	prof := e.admin("POST", "/api/v1/admin/maas-sites/"+siteID+"/profiles", map[string]any{
		"name": "gpu-jammy", "architecture": "amd64/generic", "distro_series": "jammy",
	}, http.StatusCreated)
	skuID := "h100-8x-" + siteID[:8]
	e.admin("POST", "/api/v1/admin/skus", map[string]any{"id": skuID, "gpu_model": "H100", "gpus_total": 8}, http.StatusCreated)
	e.hardware("edge-gpu-1", "10.30.0.11", "52:54:00:00:03:01", nil)

	id := e.onboard(fixture{SiteID: siteID, ProfileID: prof["id"].(string), SKUID: skuID}, "edge-gpu-1", "10.30.0.11")
	o := e.waitTerminal(id)
	require.Equal(t, "completed", o["status"], "%v\nconnector log:\n%s", o, connLogs.String())

	calls := e.simCalls()
	assert.Equal(t, 1, callsWithOp(calls, "deploy"), "one deploy, though it went through the connector")
	assert.Equal(t, 1, callsWithOp(calls, "commission"), "one commissioning")
	relayed := connLogs.String()
	assert.Contains(t, relayed, `"kind":"maas"`, "MAAS calls went through the connector")

	// The pre-deploy fetch checks ran from the connector.
	assert.Contains(t, relayed, `"kind":"fetch"`)

	// maasflow never held the MAAS key: not in its secrets, logs or answers.
	secrets, err := os.ReadFile(filepath.Join(e.dataDir, "secrets.json"))
	require.NoError(t, err)
	_, _, keySecret := strings.Cut(strings.TrimPrefix(e.stack.SimAPIKey, ""), ":")
	assert.NotContains(t, string(secrets), keySecret)
	assert.NotContains(t, e.logs.String(), keySecret)
	assert.NotContains(t, relayed, keySecret, "the connector never logs the key")
}

// waitProbe probes the site until the probe is healthy (the connector's
// first heartbeat and long poll may take a moment).
func (e *env) waitProbe(siteID string) map[string]any {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		probe := e.admin("POST", "/api/v1/admin/maas-sites/"+siteID+"/probe", nil, http.StatusOK)
		if probe["healthy"] == true {
			return probe
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the probe never became healthy: %v", probe)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
