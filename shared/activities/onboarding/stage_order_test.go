package onboarding_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/internal/maassim"
	"github.com/maasflow/maasflow/shared/activities"
	"github.com/maasflow/maasflow/shared/activities/activitiestest"
	"github.com/maasflow/maasflow/shared/activities/onboarding"
	"github.com/maasflow/maasflow/shared/domain"
)

// declaredStages reads every domain.Stage constant from its source, so a
// stage added there is covered here without a list to keep.
func declaredStages(t *testing.T) []domain.Stage {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "domain", "onboarding.go"))
	require.NoError(t, err)
	var out []domain.Stage
	for _, m := range regexp.MustCompile(`(?m)^\s*Stage\w+\s+Stage\s*=\s*"(\w+)"`).FindAllSubmatch(src, -1) {
		out = append(out, domain.Stage(m[1]))
	}
	require.GreaterOrEqual(t, len(out), 10, "the Stage constants of shared/domain/onboarding.go")
	return out
}

// samplePayload is the activity's sample input (testdata) for onboarding o.
func samplePayload(t *testing.T, activity string, o domain.Onboarding) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", activity+".json"))
	require.NoError(t, err)
	var in map[string]any
	require.NoError(t, json.Unmarshal(raw, &in))
	r := ref(o)
	in["onboarding_id"], in["site_id"], in["hostname"], in["attempt"], in["correlation_id"] =
		r.OnboardingID, r.SiteID, r.Hostname, r.Attempt, r.CorrelationID
	return in
}

// outcomeFrom runs activity on a running onboarding recorded at stage,
// whose machine MAAS reports Ready, and returns the error name ("" for
// success).
func outcomeFrom(t *testing.T, activity string, stage domain.Stage) string {
	t.Helper()
	e := newEnv(t, activitiestest.Options{})
	o := e.f.AddOnboarding(t, "gpu-01", "10.0.0.11")
	sid, err := e.f.Sim.AddMachine(maassim.MachineSeed{Hostname: "gpu-01", BMCIP: "10.0.0.11", PXEMAC: "52:54:00:00:00:11", Status: "Ready"})
	require.NoError(t, err)
	e.placeAt(o, stage, sid)
	err = e.call(activity, samplePayload(t, activity, o), nil)
	if err == nil {
		return ""
	}
	return lambdaErrorType(err)
}

// TestActivitiesDoNotEncodeStageOrder: the state machine is the only place
// that orders the steps. An activity run on the same onboarding and the
// same machine must answer the same whatever stage the onboarding was
// recorded in before it (its own stage aside: that is a retry of itself),
// so a list of predecessor stages in any activity fails here, and a
// recovery may enter the workflow at any stage.
func TestActivitiesDoNotEncodeStageOrder(t *testing.T) {
	own := map[string]domain.Stage{
		"DiscoverMachine": domain.StageDiscover, "CommissionMachine": domain.StageCommission,
		"CheckMachine": domain.StageWaitDeployed, "PowerCycleMachine": domain.StageWaitReady, "ConfigureStorage": domain.StageStorage,
		"PreflightPXE": domain.StagePXEPreflight, "ApplyRoCE": domain.StageRoCE, "CheckPredeploy": domain.StageHardening,
		"DeployMachine": domain.StageDeploy, "ClassifyDeployFailure": domain.StageWaitDeployed,
		"RecoverDeploy": domain.StageRecoverDeploy, "AwaitEnrollment": domain.StageWaitEnrollment,
		"CheckCompletionGates": domain.StageCompletionGates, "FinishOnboarding": "", "TakeSiteSlot": domain.StageQueued,
		"ResetMachine": domain.StageReset, "AdoptMachine": domain.StageAdopt, "VerifyHardware": domain.StageVerifyHardware,
		"ConfigureMachine": domain.StageConfigureMachine,
		// The watcher reads no onboarding at all.
		"WatchMachine": "", "WatchSites": "",
	}
	stages := declaredStages(t)
	for _, fn := range onboarding.Catalog(activities.Deps{}) {
		if fn.Activity == "ValidateOnboarding" {
			continue // it starts the run: pending → running, tested on its own
		}
		ownStage, ok := own[fn.Activity]
		require.True(t, ok, "activity %s: name its own stage here", fn.Activity)
		t.Run(fn.Activity, func(t *testing.T) {
			outcomes := map[string][]domain.Stage{}
			for _, s := range stages {
				if s == ownStage {
					continue
				}
				name := outcomeFrom(t, fn.Activity, s)
				outcomes[name] = append(outcomes[name], s)
			}
			assert.Len(t, outcomes, 1, "the outcome depends on the recorded stage (error name → stages): %v", outcomes)
		})
	}
}
