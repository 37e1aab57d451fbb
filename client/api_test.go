package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	minidyn "github.com/truora/minidyn/aws-v2/client"

	"github.com/maasflow/maasflow/client"
	"github.com/maasflow/maasflow/shared/api"
	"github.com/maasflow/maasflow/shared/clock"
	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/enroll"
	"github.com/maasflow/maasflow/shared/maas"
	"github.com/maasflow/maasflow/shared/secrets"
	"github.com/maasflow/maasflow/shared/store"
)

// The SDK against the real admin API handler (real store on minidyn, file
// secrets; the workflow and MAAS faked) pins field names and routes on
// both sides.

const realToken = "sdk-test-token"

type starter struct{}

func (starter) StartOnboarding(_ context.Context, o domain.Onboarding) (string, error) {
	return "exec-" + o.ID, nil
}
func (starter) OnboardingExecutionID(o domain.Onboarding) string { return "exec-" + o.ID }

type stopper struct{}

func (stopper) StopOnboarding(context.Context, string, string) error { return nil }

type completer struct{}

func (completer) CompleteEnrollment(context.Context, string, []byte) error { return nil }

type prober struct{}

func (prober) ProbeScripts(context.Context, string, domain.Secret, []string) (maas.ProbeResult, error) {
	return maas.ProbeResult{Version: "3.5.4", Username: "maasflow", IsAdmin: true}, nil
}

func realAPI(t *testing.T) *client.Client {
	t.Helper()
	c, _ := realAPIPair(t)
	return c
}

// secondToken is a second admin (carol), for what needs two admins.
const secondToken = "sdk-test-second-admin"

// realAPIPair is realAPI with a client for each of two admins.
func realAPIPair(t *testing.T) (alice, carol *client.Client) {
	t.Helper()
	ctx := context.Background()
	db := minidyn.NewClient()
	require.NoError(t, store.CreateTable(ctx, db, ""))
	clk := clock.NewFake(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	var seq atomic.Int64
	srv := httptest.NewServer(api.New(api.Config{}, api.Deps{
		Store:     store.New(db, "", clk.Now),
		Secrets:   secrets.NewFileStore(filepath.Join(t.TempDir(), "secrets.json")),
		Starter:   starter{},
		Stopper:   stopper{},
		Completer: completer{},
		Prober:    prober{},
		Auth: api.NewStaticTokens(map[string]api.Principal{
			realToken: {Subject: "alice", Admin: true}, secondToken: {Subject: "carol", Admin: true},
		}),
		Clock: clk,
		NewID: func() string { return fmt.Sprintf("id-%04d", seq.Add(1)) },
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithToken(realToken))
	require.NoError(t, err)
	second, err := client.New(srv.URL, client.WithToken(secondToken))
	require.NoError(t, err)
	return c, second
}

func TestAgainstTheRealAPI(t *testing.T) {
	ctx := context.Background()
	c := realAPI(t)
	require.NoError(t, c.Health(ctx))

	ca, err := enroll.DevCA()
	require.NoError(t, err)
	yes := true
	site, err := c.CreateSite(ctx, client.SiteCreate{Name: "lab", MAASURL: "http://maas.lab:5240/MAAS", Policy: &client.Policy{
		AutoClaimNew: &yes, EnrollmentURL: ptr("https://api.lab"),
		Bootstrap: &domain.BootstrapRef{URL: "https://boot.lab/site.sh", Version: "1", CABundle: ca},
	}})
	require.NoError(t, err)
	assert.Equal(t, "lab", site.Name)
	assert.True(t, site.EffectivePolicy.AutoClaimNew)
	require.NoError(t, c.PutCredentials(ctx, site.ID, client.Credentials{MAASAPIKey: "ck:tk:sec", BMCUsername: "admin", BMCPassword: "pw"}))
	probe, err := c.ProbeSite(ctx, site.ID)
	require.NoError(t, err)
	assert.True(t, probe.Healthy)
	assert.Equal(t, "3.5.4", probe.Version)
	sites, err := c.ListSites(ctx)
	require.NoError(t, err)
	require.Len(t, sites, 1)
	assert.True(t, sites[0].CredentialsSet)

	prof, err := c.CreateProfile(ctx, site.ID, client.ProfileCreate{Name: "gpu", Architecture: "amd64/generic", DistroSeries: "jammy"})
	require.NoError(t, err)
	prof, err = c.UpdateProfile(ctx, site.ID, prof.ID, client.ProfilePatch{HWEKernel: ptr("hwe-22.04")})
	require.NoError(t, err)
	assert.Equal(t, "hwe-22.04", prof.HWEKernel)
	_, err = c.CreateSKU(ctx, client.SKUCreate{ID: "h100x8", GPUModel: "H100", GPUsTotal: 8})
	require.NoError(t, err)
	sku, err := c.UpdateSKU(ctx, "h100x8", client.SKUPatch{Description: ptr("eight")})
	require.NoError(t, err)
	assert.Equal(t, "eight", sku.Description)

	roce, err := c.UpsertRoCE(ctx, site.ID, []client.RoCEAssignmentInput{{Hostname: "gpu-01", Interface: "enp28s0np0", IPv4CIDR: "172.30.9.61/31"}})
	require.NoError(t, err)
	require.Len(t, roce, 1)
	listed, err := c.ListRoCE(ctx, site.ID, "gpu-01")
	require.NoError(t, err)
	assert.Equal(t, "172.30.9.61/31", listed[0].IPv4CIDR)

	var ids []string
	for i := range 3 {
		ob, err := c.CreateOnboarding(ctx, client.OnboardingCreate{SiteID: site.ID, ProfileID: prof.ID, SKUID: "h100x8",
			Hostname: fmt.Sprintf("gpu-%02d", i+1), IPMIIP: fmt.Sprintf("10.0.0.%d", i+1)})
		require.NoError(t, err)
		ids = append(ids, ob.ID)
	}
	var seen []string
	for ob, err := range c.Onboardings(ctx, client.OnboardingFilter{SiteID: site.ID, Limit: 1}) {
		require.NoError(t, err)
		seen = append(seen, ob.ID)
	}
	assert.ElementsMatch(t, ids, seen, "one item a page, every page followed")

	detail, err := c.GetOnboarding(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, "gpu-01", detail.Hostname)
	assert.Contains(t, detail.AllowedOperations, domain.OpCancel)
	cancelled, err := c.CancelOnboarding(ctx, ids[0], "wrong rack")
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingCancelled, cancelled.Status)
	done, err := c.WaitOnboarding(ctx, ids[0], client.WaitOptions{Interval: time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingCancelled, done.Status)

	_, err = c.RecoverOnboarding(ctx, ids[0], domain.OpResume, "")
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusConflict, apiErr.Status)
	assert.NotEmpty(t, apiErr.CorrelationID)

	_, err = c.GetNode(ctx, "no-such-node")
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, client.CodeNotFound, apiErr.Code)

	n := 0
	for e, err := range c.Audit(ctx, 2) {
		require.NoError(t, err)
		assert.Equal(t, "alice", e.Actor)
		n++
	}
	assert.GreaterOrEqual(t, n, 8, "every write was audited")

	_, err = c.ReconciliationStatus(ctx)
	assert.True(t, client.IsCode(err, client.CodeServiceUnavailable), "no reconciler in this deployment: %v", err)
	for d, err := range c.Decommissions(ctx, client.DecommissionFilter{}) {
		require.NoError(t, err)
		t.Fatalf("no decommission was started, listed %s", d.ID)
	}
	plan, err := c.PlanDisableSite(ctx, site.ID)
	require.NoError(t, err)
	assert.True(t, plan.DryRun)
	assert.Equal(t, client.PlanSite{ID: site.ID, Name: "lab", Status: "active", StatusAfter: "disabled"}, *plan.Site)
	still, err := c.GetSite(ctx, site.ID)
	require.NoError(t, err)
	assert.Equal(t, "active", still.Status, "a dry run writes nothing")
	_, err = c.PlanRemoveNode(ctx, "no-such-node")
	assert.True(t, client.IsCode(err, client.CodeNotFound), "a dry run refuses as the real request: %v", err)

	bad, err := client.New(c.BaseURL(), client.WithToken("wrong"))
	require.NoError(t, err)
	_, err = bad.ListSKUs(ctx)
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusUnauthorized, apiErr.Status)
}

func ptr[T any](v T) *T { return &v }
