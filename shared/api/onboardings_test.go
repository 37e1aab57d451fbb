package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

func TestCreateOnboarding(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()

	r := h.do(call{method: "POST", path: "/api/v1/admin/onboardings", body: fx.onboarding("GPU-01.dc1"), token: adminToken,
		header: map[string]string{HeaderCorrelationID: "op-ticket-42"}})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	o := r.json(t)
	id := o["id"].(string)
	assert.Equal(t, "pending", o["status"])
	assert.Equal(t, "validate", o["stage"])
	assert.InDelta(t, 1, o["attempt"], 0)
	assert.Equal(t, "gpu-01.dc1", o["hostname"], "host names are stored in lower case")
	assert.Equal(t, "op-ticket-42", o["correlation_id"])
	assert.Equal(t, "alice", o["created_by"])
	assert.Equal(t, "exec-"+id, o["execution_id"])
	assert.NotEmpty(t, o["node_id"])
	assert.Equal(t, "/api/v1/admin/onboardings/"+id, r.header.Get("Location"))

	started := h.starter.started()
	require.Len(t, started, 1)
	assert.Equal(t, id, started[0].ID)
	assert.Equal(t, "exec-"+id, started[0].ExecutionID, "the record names its execution before it starts")
	assert.Equal(t, nodeIDOf(t, h, fx.site, "gpu-01.dc1"), started[0].NodeID)
	assert.Equal(t, fx.site, started[0].SiteID)
	assert.Equal(t, bmcFor("GPU-01.dc1"), started[0].IPMIIP)

	node, found, err := h.store.FindNodeByHost(context.Background(), fx.site, "gpu-01.dc1")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, domain.NodeOnboarding, node.Status)
	assert.Equal(t, id, node.OnboardingID)
	assert.Equal(t, o["node_id"], node.ID)

	stored, err := h.store.GetOnboarding(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "exec-"+id, stored.ExecutionID)
	assert.Equal(t, int64(1), stored.Version, "the onboarding, its node and its execution id are one write")
	assert.Equal(t, int64(1), node.Version)

	got := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+id, nil)
	for _, k := range []string{"id", "status", "stage", "attempt", "maas_system_id", "node_id", "timeline", "diagnostics"} {
		assert.Contains(t, got, k)
	}
	assert.Equal(t, []any{}, got["timeline"])
}

// nodeIDOf is the id of the site's node for host.
func nodeIDOf(t *testing.T, h *harness, site, host string) string {
	t.Helper()
	n, found, err := h.store.FindNodeByHost(context.Background(), site, host)
	require.NoError(t, err)
	require.True(t, found, "no node for %s", host)
	return n.ID
}

func TestCreateOnboardingRecordsTheExecutionTheStarterNames(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	h.starter.rename = func(id string) string { return id + "-elsewhere" }

	o := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))
	id := o["id"].(string)
	assert.Equal(t, "exec-"+id+"-elsewhere", o["execution_id"])
	stored, err := h.store.GetOnboarding(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "exec-"+id+"-elsewhere", stored.ExecutionID)
}

func TestCreateOnboardingRefusesUnreadyReferences(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(h *harness, fx fixture, body map[string]any)
		status  int
		code    string
		field   string
	}{
		{
			name: "disabled site",
			prepare: func(h *harness, fx fixture, _ map[string]any) {
				h.mustAdmin(http.StatusOK, "DELETE", "/api/v1/admin/maas-sites/"+fx.site, nil)
			},
			status: 422, code: CodeInvalidReference, field: "site_id",
		},
		{
			name: "disabled profile",
			prepare: func(h *harness, fx fixture, _ map[string]any) {
				h.mustAdmin(http.StatusOK, "DELETE", "/api/v1/admin/maas-sites/"+fx.site+"/profiles/"+fx.profile, nil)
			},
			status: 422, code: CodeInvalidReference, field: "profile_id",
		},
		{
			name: "profile of another site",
			prepare: func(h *harness, _ fixture, body map[string]any) {
				// A profile id from another site does not exist on this one.
				body["profile_id"] = h.profile(h.readySite("other"), nil)
			},
			status: 422, code: CodeInvalidReference, field: "profile_id",
		},
		{
			name: "inactive sku",
			prepare: func(h *harness, fx fixture, _ map[string]any) {
				h.deactivateSKU(fx.sku)
			},
			status: 422, code: CodeInvalidReference, field: "sku_id",
		},
		{
			name: "unhealthy probe",
			prepare: func(h *harness, fx fixture, _ map[string]any) {
				h.prober.set(maas.ProbeResult{}, errors.New("maas version: unauthorized: check the site's API key"))
				h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+fx.site+"/probe", nil)
			},
			status: 422, code: CodeSiteNotReady, field: "site_id",
		},
		{
			name: "never probed after new credentials",
			prepare: func(h *harness, fx fixture, _ map[string]any) {
				h.mustAdmin(http.StatusOK, "POST", "/api/v1/admin/maas-sites/"+fx.site+"/credentials",
					map[string]any{"maas_api_key": "a:b:c", "bmc_username": "u", "bmc_password": "p"})
			},
			status: 422, code: CodeSiteNotReady, field: "site_id",
		},
		{
			name: "no credentials",
			prepare: func(h *harness, fx fixture, _ map[string]any) {
				ctx := context.Background()
				_, err := h.store.UpdateSite(ctx, fx.site, func(s *domain.Site) error { s.CredentialsSet = false; return nil })
				require.NoError(t, err)
			},
			status: 422, code: CodeSiteNotReady, field: "site_id",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			fx := h.fixture()
			body := fx.onboarding("gpu-01")
			tc.prepare(h, fx, body)
			r := h.admin("POST", "/api/v1/admin/onboardings", body)
			require.Equal(t, tc.status, r.status, "%s", r.body)
			code, msg := r.errorOf(t)
			assert.Equal(t, tc.code, code)
			assert.Regexp(t, "^"+tc.field+": ", msg)
			assert.Empty(t, h.starter.started(), "nothing starts")
			_, found, err := h.store.FindNodeByHost(context.Background(), fx.site, "gpu-01")
			require.NoError(t, err)
			assert.False(t, found, "no node record is written for a refused request")
		})
	}
}

func TestDuplicateOnboardingConflicts(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	first := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))

	r := h.admin("POST", "/api/v1/admin/onboardings", fx.onboarding("GPU-01"))
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	code, msg := r.errorOf(t)
	assert.Equal(t, CodeOnboardingExists, code)
	assert.Contains(t, msg, "hostname: ")
	assert.Contains(t, msg, first["id"].(string))
	assert.Len(t, h.starter.started(), 1, "the second request starts nothing")

	// Another host is independent.
	h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-02"))

	// The failure is audited too.
	entries := h.auditFor("onboarding.create")
	require.Len(t, entries, 3)
	results := []string{}
	for _, e := range entries {
		results = append(results, e.Result)
	}
	assert.ElementsMatch(t, []string{"success", "success", "failure:" + CodeOnboardingExists}, results)
}

func TestOnboardingStartFailureLeavesNoHalfState(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	h.starter.err = errors.New("sfn: ServiceUnavailable")

	r := h.admin("POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))
	require.Equal(t, http.StatusServiceUnavailable, r.status, "%s", r.body)
	code, _ := r.errorOf(t)
	assert.Equal(t, CodeUnavailable, code)
	assert.NotContains(t, string(r.body), "ServiceUnavailable", "the cause is logged, not sent")
	assert.Contains(t, h.logs.String(), "sfn: ServiceUnavailable")

	started := h.starter.started()
	require.Len(t, started, 1)
	failed, err := h.store.GetOnboarding(context.Background(), started[0].ID)
	require.NoError(t, err)
	assert.Equal(t, domain.OnboardingFailed, failed.Status)
	require.NotNil(t, failed.Error)
	assert.Equal(t, startFailure, failed.Error.Code)
	assert.NotNil(t, failed.CompletedAt)
	assert.Empty(t, failed.ExecutionID, "no execution ever ran")

	// The host is free again.
	h.starter.err = nil
	again := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))
	assert.NotEqual(t, started[0].ID, again["id"])
	assert.Equal(t, started[0].NodeID, again["node_id"], "the node record is reused")

	detail := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+started[0].ID, nil)
	assert.Equal(t, "failed", detail["status"])
	require.Len(t, detail["timeline"], 1)
	assert.Equal(t, "failed", detail["timeline"].([]any)[0].(map[string]any)["outcome"])

	// The failed request's create committed with its audit entry; its
	// failure is recorded after it, under the same correlation id.
	entries := h.auditFor("onboarding.create")
	require.Len(t, entries, 3)
	assert.Equal(t, "success", entries[0].Result, "newest first")
	assert.Equal(t, "failure:"+CodeUnavailable, entries[1].Result)
	assert.Equal(t, "onboarding:"+started[0].ID, entries[1].Target)
	assert.Equal(t, "success", entries[2].Result, "the create itself")
	assert.Equal(t, "onboarding:"+started[0].ID, entries[2].Target)
	assert.Equal(t, entries[1].CorrelationID, entries[2].CorrelationID)
}

func TestOnboardingOfActiveNodeIsRefused(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	o := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))
	ctx := context.Background()
	_, err := h.store.UpdateOnboarding(ctx, o["id"].(string), func(o *domain.Onboarding) error { o.Status = domain.OnboardingCompleted; return nil })
	require.NoError(t, err)
	_, err = h.store.UpdateNode(ctx, o["node_id"].(string), func(n *domain.Node) error { n.Status = domain.NodeActive; return nil })
	require.NoError(t, err)

	r := h.admin("POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	_, msg := r.errorOf(t)
	assert.Contains(t, msg, "hostname: ")
	assert.Len(t, h.starter.started(), 1)
}

func TestListOnboardings(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	fx2 := fixture{site: h.readySite("dc2"), sku: fx.sku}
	fx2.profile = h.profile(fx2.site, nil)
	ids := map[string]string{}
	for i := range 5 {
		host := fmt.Sprintf("gpu-%02d", i)
		ids[host] = h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding(host))["id"].(string)
		h.clock.Advance(time.Second)
	}
	h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx2.onboarding("gpu-00"))
	_, err := h.store.UpdateOnboarding(context.Background(), ids["gpu-03"], func(o *domain.Onboarding) error {
		o.Status = domain.OnboardingRunning
		return nil
	})
	require.NoError(t, err)

	count := func(query string) int {
		return len(h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings"+query, nil)["items"].([]any))
	}
	assert.Equal(t, 6, count(""))
	assert.Equal(t, 5, count("?site_id="+url.QueryEscape(fx.site)))
	assert.Equal(t, 2, count("?hostname=gpu-00"))
	assert.Equal(t, 1, count("?hostname=gpu-00&site_id="+url.QueryEscape(fx2.site)))
	assert.Equal(t, 1, count("?status=running"))
	assert.Equal(t, 5, count("?status=pending"))

	// Pages of two walk all six, newest first, without repeats.
	seen := map[string]bool{}
	cursor := ""
	pages := 0
	for {
		q := "?limit=2"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		page := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings"+q, nil)
		pages++
		for _, it := range page["items"].([]any) {
			id := it.(map[string]any)["id"].(string)
			assert.False(t, seen[id], "repeat %s", id)
			seen[id] = true
		}
		require.Contains(t, page, "next_cursor")
		cursor = page["next_cursor"].(string)
		if cursor == "" || pages > 10 {
			break
		}
	}
	assert.Len(t, seen, 6)
	first := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings?limit=1&site_id="+url.QueryEscape(fx.site), nil)
	assert.Equal(t, ids["gpu-04"], first["items"].([]any)[0].(map[string]any)["id"], "newest first")
}

func TestOnboardingDetailTimelineAndDiagnostics(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	ctx := context.Background()
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	require.NoError(t, h.store.AppendOnboardingEvents(ctx,
		domain.TimelineEntry{OnboardingID: id, Time: at(1), Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageDeploy},
		domain.TimelineEntry{OnboardingID: id, Time: at(9), Attempt: 1, Kind: domain.TimelineStageExited, Stage: domain.StageWaitDeployed, Outcome: "failed"},
	))
	// MAAS events are copied later but happened in between.
	require.NoError(t, h.store.AppendOnboardingEvents(ctx,
		domain.TimelineEntry{OnboardingID: id, Time: at(3), Attempt: 1, Kind: domain.TimelineMAASEvent, Stage: domain.StageWaitDeployed, Detail: "Deploying: Installing OS", MAASEventID: 101},
		domain.TimelineEntry{OnboardingID: id, Time: at(8), Attempt: 1, Kind: domain.TimelineMAASEvent, Stage: domain.StageWaitDeployed, Detail: "Failed deployment: cloudinit datasource timed out", MAASEventID: 102},
		domain.TimelineEntry{OnboardingID: id, Time: at(9), Attempt: 1, Kind: domain.TimelineDiagnostic, Stage: domain.StageWaitDeployed, Source: "installation_output", Detail: "curtin: Installation failed"},
		domain.TimelineEntry{OnboardingID: id, Time: at(9), Attempt: 1, Kind: domain.TimelineDiagnostic, Stage: domain.StageWaitDeployed, Source: "50-maas-01-commissioning", Detail: "exit 1"},
	))

	d := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+id, nil)
	tl := d["timeline"].([]any)
	require.Len(t, tl, 6)
	kinds := []string{}
	var last time.Time
	for _, e := range tl {
		m := e.(map[string]any)
		kinds = append(kinds, m["kind"].(string))
		ts, err := time.Parse(time.RFC3339Nano, m["time"].(string))
		require.NoError(t, err)
		assert.False(t, ts.Before(last), "time order")
		last = ts
		if m["kind"] == domain.TimelineDiagnostic {
			assert.NotContains(t, m, "detail", "output lives under diagnostics")
		}
	}
	assert.Equal(t, []string{"stage_entered", "maas_event", "maas_event", "stage_exited", "diagnostic", "diagnostic"}, kinds)

	diag := d["diagnostics"].(map[string]any)
	assert.Equal(t, "curtin: Installation failed", diag["installation_output"])
	require.Len(t, diag["maas_events"], 2)
	assert.Equal(t, "Failed deployment: cloudinit datasource timed out", diag["maas_events"].([]any)[1].(map[string]any)["detail"])
	require.Len(t, diag["script_results"], 1)
	sr := diag["script_results"].([]any)[0].(map[string]any)
	assert.Equal(t, "50-maas-01-commissioning", sr["name"])
	assert.Equal(t, "exit 1", sr["output"])

	assert.Equal(t, http.StatusNotFound, h.admin("GET", "/api/v1/admin/onboardings/nope", nil).status)
}

// TestOneServerOneOpenOnboarding reproduces a defect a security review found: parallel
// onboardings with one ipmi_ip and different host names used to all start.
func TestOneServerOneOpenOnboarding(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	const n = 10
	statuses := make([]int, n)
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fx.onboarding(fmt.Sprintf("gpu-%02d", i))
			body["ipmi_ip"] = "10.7.7.7"
			r := h.do(call{method: "POST", path: "/api/v1/admin/onboardings", body: body, token: adminToken})
			statuses[i], bodies[i] = r.status, r.body
		})
	}
	wg.Wait()
	started := 0
	for i, st := range statuses {
		if st == http.StatusAccepted {
			started++
			continue
		}
		require.Equal(t, http.StatusConflict, st, "%s", bodies[i])
		var env struct {
			Error struct{ Code, Field, Message string }
		}
		require.NoError(t, json.Unmarshal(bodies[i], &env))
		assert.Equal(t, CodeOnboardingExists, env.Error.Code)
		assert.Equal(t, "ipmi_ip", env.Error.Field)
		assert.Contains(t, env.Error.Message, "10.7.7.7")
	}
	assert.Equal(t, 1, started)
	assert.Len(t, h.starter.started(), 1, "one workflow for one server")

	// A later attempt under a new host name leaves no node record behind.
	body := fx.onboarding("gpu-99")
	body["ipmi_ip"] = "10.7.7.7"
	r := h.do(call{method: "POST", path: "/api/v1/admin/onboardings", body: body, token: adminToken})
	require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
	_, found, err := h.store.FindNodeByHost(context.Background(), fx.site, "gpu-99")
	require.NoError(t, err)
	assert.False(t, found)
}
