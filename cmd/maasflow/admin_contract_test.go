package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/truora/minidyn/aws-v2/client"

	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/store"
)

// The contract test drives the CLI against the real admin API handler (real
// store on minidyn, file secrets), with the workflow and MAAS faked: it
// pins field names and routes on both sides.

type adminTestStarter struct{}

func (adminTestStarter) StartOnboarding(_ context.Context, o domain.Onboarding) (string, error) {
	return "exec-" + o.ID, nil
}

func (adminTestStarter) OnboardingExecutionID(o domain.Onboarding) string { return "exec-" + o.ID }

type adminTestStopper struct{}

func (adminTestStopper) StopOnboarding(context.Context, string, string) error { return nil }

type adminTestCompleter struct{}

func (adminTestCompleter) CompleteEnrollment(context.Context, string, []byte) error { return nil }

type adminTestProber struct{}

func (adminTestProber) ProbeScripts(context.Context, string, domain.Secret, []string) (maas.ProbeResult, error) {
	return maas.ProbeResult{Version: "3.5.4", Capabilities: []string{"networks-management"}, Username: "maasflow", IsAdmin: true}, nil
}

// newAdminRealAPI serves the real admin API; with adjust changing its
// dependencies (a reconciler, say).
func newAdminRealAPI(t *testing.T, adjust ...func(*api.Deps)) string {
	t.Helper()
	ctx := context.Background()
	db := client.NewClient()
	require.NoError(t, store.CreateTable(ctx, db, ""))
	clk := clock.NewFake(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	var seq atomic.Int64
	deps := api.Deps{
		Store:     store.New(db, "", clk.Now),
		Secrets:   secrets.NewFileStore(filepath.Join(t.TempDir(), "secrets.json")),
		Starter:   adminTestStarter{},
		Stopper:   adminTestStopper{},
		Completer: adminTestCompleter{},
		Prober:    adminTestProber{},
		Auth: api.NewStaticTokens(map[string]api.Principal{
			adminTestToken: {Subject: "alice", Admin: true}, adminTestSecondToken: {Subject: "carol", Admin: true},
		}),
		Clock: clk,
		NewID: func() string { return fmt.Sprintf("id-%04d", seq.Add(1)) },
	}
	for _, f := range adjust {
		f(&deps)
	}
	srv := httptest.NewServer(api.New(api.Config{}, deps))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestAdminCLIAgainstTheAPI(t *testing.T) {
	const (
		apiKey   = "ck9Xq2:tkB7wZ4mPq:sEcReT0aPiKeY77xx"
		bmcPass  = "bmc-Pa55w0rd-seeded"
		hostname = "gpu-01"
	)
	env := map[string]string{envAdminAPIURL: newAdminRealAPI(t), envAdminToken: adminTestToken}
	var transcript strings.Builder
	cli := func(t *testing.T, inv adminInvocation, wantCode int, args ...string) adminResult {
		t.Helper()
		res := runAdminTest(t, env, inv, args...)
		transcript.WriteString(res.stdout + res.stderr)
		require.Equal(t, wantCode, res.code, "maasflow %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.stdout, res.stderr)
		return res
	}
	idOf := func(t *testing.T, res adminResult) string {
		t.Helper()
		var v struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &v), res.stdout)
		require.NotEmpty(t, v.ID)
		return v.ID
	}

	// The site policy resolves the bootstrap inputs: an onboarding is
	// refused (policy_incomplete) without them.
	ca, err := enroll.DevCA()
	require.NoError(t, err)
	sitePolicy, err := json.Marshal(map[string]any{"auto_claim_new": true, "enrollment_url": "https://api.lab",
		"bootstrap": map[string]any{"url": "https://boot.lab/site.sh", "version": "1", "ca_bundle_pem": ca}})
	require.NoError(t, err)
	site := idOf(t, cli(t, adminInvocation{}, 0, "sites", "create", "--name", "lab", "--maas-url", "http://maas.lab:5240/MAAS",
		"--policy-json", string(sitePolicy), "-o", "json"))
	res := cli(t, adminInvocation{stdin: fmt.Sprintf(`{"maas_api_key":%q,"bmc_username":"admin","bmc_password":%q}`, apiKey, bmcPass)},
		0, "sites", "credentials", site)
	assert.Contains(t, res.stdout, "credentials stored for site "+site)
	res = cli(t, adminInvocation{}, 0, "sites", "probe", site)
	assert.Contains(t, res.stdout, "3.5.4")
	res = cli(t, adminInvocation{}, 0, "sites", "get", site)
	assert.Contains(t, res.stdout, "healthy (MAAS 3.5.4")
	assert.Regexp(t, `auto_claim_new\s+true`, res.stdout)

	profile := idOf(t, cli(t, adminInvocation{}, 0, "profiles", "create", site, "--name", "gpu", "--architecture", "amd64/generic",
		"--distro-series", "jammy", "--policy-json", `{"roce_phase2":true}`, "-o", "json"))
	res = cli(t, adminInvocation{}, 0, "profiles", "get", site, profile)
	assert.Regexp(t, `roce_phase2\s+true`, res.stdout)
	cli(t, adminInvocation{}, 0, "profiles", "patch", site, profile, "--hwe-kernel", "hwe-22.04")
	res = cli(t, adminInvocation{}, 0, "profiles", "list", site)
	assert.Contains(t, res.stdout, "hwe-22.04")

	cli(t, adminInvocation{}, 0, "skus", "create", "--id", "h100x8", "--gpu-model", "H100", "--gpus-total", "8")
	res = cli(t, adminInvocation{}, 0, "skus", "list")
	assert.Contains(t, res.stdout, "H100")

	cli(t, adminInvocation{stdin: "hostname,interface,ipv4_cidr\ngpu-01,enp28s0np0,172.30.9.61/31\ngpu-01,enp29s0np0,172.29.1.219/31\n"},
		0, "roce", "upsert", site, "--csv", "--file", "-")
	res = cli(t, adminInvocation{}, 0, "roce", "list", site, "--hostname", hostname, "-o", "json")
	var roce struct {
		Items []adminRoCEView `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &roce))
	require.Len(t, roce.Items, 2)
	cli(t, adminInvocation{}, 0, "roce", "delete", site, roce.Items[0].ID)

	onboard := []string{"onboard", "--site", site, "--profile", profile, "--sku", "h100x8", "--hostname", hostname, "--ipmi-ip", "10.0.0.5"}
	ob := idOf(t, cli(t, adminInvocation{}, 0, append(onboard, "-o", "json")...))
	res = cli(t, adminInvocation{}, 1, onboard...)
	assert.Regexp(t, `^error: onboarding_exists: hostname: .* already has open onboarding `+ob+` \(correlation_id \S+\)\n$`, res.stderr)
	res = cli(t, adminInvocation{}, 1, "onboard", "--site", site, "--profile", profile, "--sku", "h100x8", "--hostname", "Not_A_Host", "--ipmi-ip", "10.0.0.6")
	assert.Contains(t, res.stderr, "error: invalid_request: hostname:")

	res = cli(t, adminInvocation{}, 0, "onboardings", "list", "--site", site, "--status", "pending", "--all")
	assert.Contains(t, res.stdout, ob)
	res = cli(t, adminInvocation{}, 0, "onboardings", "get", ob)
	assert.Contains(t, res.stdout, "pending")
	assert.Contains(t, res.stdout, hostname)

	res = cli(t, adminInvocation{}, 0, "onboardings", "cancel", ob, "--reason", "host re-cabled")
	assert.Contains(t, res.stdout, "onboarding "+ob+" cancelled at stage validate: host re-cabled")
	res = cli(t, adminInvocation{}, 1, "onboardings", "cancel", ob)
	assert.Contains(t, res.stderr, "error: conflict: onboarding "+ob+" is already cancelled")
	ob2 := idOf(t, cli(t, adminInvocation{}, 0, append(onboard, "-o", "json")...))
	assert.NotEqual(t, ob, ob2, "the cancel freed the host")

	// A deactivation is a proposal a second admin approves.
	cli(t, adminInvocation{}, 0, "skus", "patch", "h100x8", "--active=false", "--rollback-note", "reactivate and approve")
	var sku struct {
		Proposal struct {
			ID string `json:"id"`
		} `json:"proposal"`
	}
	require.NoError(t, json.Unmarshal([]byte(cli(t, adminInvocation{}, 0, "skus", "get", "h100x8", "-o", "json").stdout), &sku))
	second := map[string]string{envAdminAPIURL: env[envAdminAPIURL], envAdminToken: adminTestSecondToken}
	require.Equal(t, 0, runAdminTest(t, second, adminInvocation{}, "skus", "approve", "h100x8", "--proposal", sku.Proposal.ID).code)
	res = cli(t, adminInvocation{}, 0, "skus", "get", "h100x8")
	assert.Regexp(t, `Active:\s+false`, res.stdout)
	cli(t, adminInvocation{}, 0, "sites", "patch", site, "--policy-json", `{"deploy_retries":2}`)
	cli(t, adminInvocation{}, 0, "profiles", "disable", site, profile)
	cli(t, adminInvocation{}, 0, "sites", "disable", site, "--yes")
	res = cli(t, adminInvocation{}, 1, "sites", "get", "missing-site")
	assert.Contains(t, res.stderr, "error: not_found:")

	res = cli(t, adminInvocation{}, 0, "audit", "--limit", "100")
	for _, action := range []string{"site.create", "site.credentials.write", "site.probe", "profile.create", "roce.upsert", "roce.delete", "sku.update", "onboarding.create", "onboarding.cancel", "site.disable"} {
		assert.Contains(t, res.stdout, action)
	}

	for _, secret := range []string{apiKey, bmcPass, "sEcReT0aPiKeY77xx", adminTestToken} {
		assert.NotContains(t, transcript.String(), secret)
	}
}
