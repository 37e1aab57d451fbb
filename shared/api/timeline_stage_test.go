package api

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// MAAS's commissioning events, copied while the workflow already waited
// for the deployment, name the stage that ran when MAAS logged them.
func TestTimelineLabelsMAASEventsWithTheStageOfTheirTime(t *testing.T) {
	h := newHarness(t)
	fx := h.fixture()
	id := h.mustAdmin(http.StatusAccepted, "POST", "/api/v1/admin/onboardings", fx.onboarding("gpu-01"))["id"].(string)
	ctx := context.Background()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	require.NoError(t, h.store.AppendOnboardingEvents(ctx,
		domain.TimelineEntry{OnboardingID: id, Time: at(10), Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageCommission},
		domain.TimelineEntry{OnboardingID: id, Time: at(20), Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageWaitReady},
		domain.TimelineEntry{OnboardingID: id, Time: at(40), Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageDeploy},
		domain.TimelineEntry{OnboardingID: id, Time: at(50), Attempt: 1, Kind: domain.TimelineStageEntered, Stage: domain.StageWaitDeployed},
	))
	// All read during wait_deployed, as the activity labels them.
	require.NoError(t, h.store.AppendOnboardingEvents(ctx,
		domain.TimelineEntry{OnboardingID: id, Time: at(5), Attempt: 1, Kind: domain.TimelineMAASEvent, Stage: domain.StageWaitDeployed, Detail: "INFO: Enlisted", MAASEventID: 1},
		domain.TimelineEntry{OnboardingID: id, Time: at(12), Attempt: 1, Kind: domain.TimelineMAASEvent, Stage: domain.StageWaitDeployed, Detail: "INFO: Commissioning", MAASEventID: 2},
		domain.TimelineEntry{OnboardingID: id, Time: at(25), Attempt: 1, Kind: domain.TimelineMAASEvent, Stage: domain.StageWaitDeployed, Detail: "INFO: Ready", MAASEventID: 3},
		domain.TimelineEntry{OnboardingID: id, Time: at(40), Attempt: 1, Kind: domain.TimelineMAASEvent, Stage: domain.StageWaitDeployed, Detail: "INFO: Deploying", MAASEventID: 4},
		domain.TimelineEntry{OnboardingID: id, Time: at(55), Attempt: 1, Kind: domain.TimelineMAASEvent, Stage: domain.StageWaitDeployed, Detail: "INFO: Deployed", MAASEventID: 5},
	))
	d := h.mustAdmin(http.StatusOK, "GET", "/api/v1/admin/onboardings/"+id, nil)
	want := map[string]string{
		"INFO: Enlisted":      string(domain.StageWaitDeployed), // before any stage: as read
		"INFO: Commissioning": string(domain.StageCommission),
		"INFO: Ready":         string(domain.StageWaitReady),
		"INFO: Deploying":     string(domain.StageDeploy), // at the stage's entry: the new stage
		"INFO: Deployed":      string(domain.StageWaitDeployed),
	}
	got := map[string]string{}
	for _, e := range d["diagnostics"].(map[string]any)["maas_events"].([]any) {
		m := e.(map[string]any)
		got[m["detail"].(string)] = m["stage"].(string)
	}
	assert.Equal(t, want, got)
	for _, e := range d["timeline"].([]any) {
		m := e.(map[string]any)
		if m["kind"] == string(domain.TimelineMAASEvent) {
			assert.Equal(t, want[m["detail"].(string)], m["stage"], "the timeline says the same")
		}
	}
}
