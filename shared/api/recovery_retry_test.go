package api

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// fakeMachines answers MachineReader with one machine per system id; a
// missing one is MAAS's 404, err fails every read.
type fakeMachines struct {
	mu       sync.Mutex
	machines map[string]maas.Machine
	err      error
	reads    int
}

func (f *fakeMachines) GetMachine(_ context.Context, _, systemID string) (maas.Machine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return maas.Machine{}, f.err
	}
	m, ok := f.machines[systemID]
	if !ok {
		return maas.Machine{}, &maas.MAASNotFoundError{}
	}
	return m, nil
}

// AbortMachine answers as MAAS does (the reply shows the status before the
// abort takes effect); no onboarding operation aborts, so it counts nothing.
func (f *fakeMachines) AbortMachine(ctx context.Context, siteID, systemID, _ string) (maas.Machine, error) {
	return f.GetMachine(ctx, siteID, systemID)
}

func (f *fakeMachines) set(systemID string, st maas.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.machines == nil {
		f.machines = map[string]maas.Machine{}
	}
	f.machines[systemID] = maas.Machine{SystemID: systemID, Status: st, StatusName: st.String()}
}

// stopped makes an onboarding that stopped with status at stage, having
// passed checkpoint cp with MAAS machine sys-1.
func (h *harness) stopped(status domain.OnboardingStatus, stage domain.Stage, cp domain.Checkpoint) string {
	h.t.Helper()
	id := h.startOnboarding(h.fixture(), "gpu-rt")
	_, err := h.store.UpdateOnboarding(context.Background(), id, func(o *domain.Onboarding) error {
		o.Status = domain.OnboardingRunning
		o.Stage = stage
		o.MAASSystemID = "sys-1"
		o.Checkpoint = cp
		o.DeployAttempts = 2
		return nil
	})
	require.NoError(h.t, err)
	h.setStatus(id, status, stage)
	return id
}

func (h *harness) lastStart() (domain.Onboarding, domain.Stage) {
	h.t.Helper()
	calls := h.starter.started()
	require.NotEmpty(h.t, calls)
	h.starter.mu.Lock()
	defer h.starter.mu.Unlock()
	require.NotEmpty(h.t, h.starter.stages, "the run was started at a stage")
	return calls[len(calls)-1], h.starter.stages[len(h.starter.stages)-1]
}

func (h *harness) notes(id, source string) []domain.TimelineEntry {
	h.t.Helper()
	rows, err := h.store.ListOnboardingEvents(context.Background(), id)
	require.NoError(h.t, err)
	var out []domain.TimelineEntry
	for _, r := range rows {
		if r.Kind == domain.TimelineNote && r.Source == source {
			out = append(out, r)
		}
	}
	return out
}

func TestRetryRunsTheStoppedStageAgainInTheSameAttempt(t *testing.T) {
	tests := []struct {
		name      string
		status    domain.OnboardingStatus
		stage     domain.Stage
		wantStart domain.Stage
		deploys   int
	}{
		{"deploy wait releases first", domain.OnboardingManualIntervention, domain.StageWaitDeployed, domain.StageRecoverDeploy, 0},
		{"failed commissioning commissions again", domain.OnboardingFailed, domain.StageWaitReady, domain.StageCommission, 2},
		{"storage", domain.OnboardingManualIntervention, domain.StageStorage, domain.StageStorage, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			id := h.stopped(tt.status, tt.stage, domain.CheckpointCommissioned)
			before := len(h.starter.started())

			got := h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+id+"/retry", map[string]any{"reason": "fixed the switch port"})
			assert.Equal(t, "pending", got["status"])
			assert.EqualValues(t, 1, got["attempt"], "same attempt")
			assert.EqualValues(t, 1, got["run"], "a new run")
			assert.Nil(t, got["error"])
			assert.Nil(t, got["completed_at"])
			assert.Equal(t, "exec-"+id+"-r1", got["execution_id"])
			assert.EqualValues(t, tt.deploys, got["deploy_attempts"])

			started, at := h.lastStart()
			assert.Equal(t, tt.wantStart, at)
			assert.Equal(t, 1, started.Run, "the run is counted before the start")
			notes := h.notes(id, "retry")
			require.Len(t, notes, 1)
			assert.Contains(t, notes[0].Detail, "fixed the switch port")
			assert.Contains(t, notes[0].Detail, "retry of stage "+string(tt.stage))
			require.Len(t, h.auditFor("onboarding.retry"), 1)
			assert.Equal(t, "alice", h.auditFor("onboarding.retry")[0].Actor)

			// A repeat answers the run it started and starts nothing.
			again := h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+id+"/retry", nil)
			assert.EqualValues(t, 1, again["run"])
			assert.Len(t, h.starter.started(), before+1)
		})
	}
}

func TestRetryRefusals(t *testing.T) {
	t.Run("completed", func(t *testing.T) {
		h := newHarness(t)
		id := h.stopped(domain.OnboardingRunning, domain.StageDone, "")
		_, err := h.store.UpdateOnboarding(context.Background(), id, func(o *domain.Onboarding) error {
			o.Status = domain.OnboardingCompleted
			return nil
		})
		require.NoError(t, err)
		r := h.admin("POST", obsPath+"/"+id+"/retry", nil)
		require.Equal(t, http.StatusConflict, r.status)
		_, msg := r.errorOf(t)
		assert.Contains(t, msg, "is completed at stage done: retry is not allowed; allowed operations: none")
	})
	t.Run("running lists what is allowed", func(t *testing.T) {
		h := newHarness(t)
		id := h.stopped(domain.OnboardingRunning, domain.StageDeploy, "")
		r := h.admin("POST", obsPath+"/"+id+"/retry", nil)
		require.Equal(t, http.StatusConflict, r.status)
		_, msg := r.errorOf(t)
		assert.Contains(t, msg, "allowed operations: cancel, mark-manual-intervention")
	})
	t.Run("enrollment wait of a node that never enrolled", func(t *testing.T) {
		h := newHarness(t)
		id := h.stopped(domain.OnboardingManualIntervention, domain.StageWaitEnrollment, domain.CheckpointDeployed)
		r := h.admin("POST", obsPath+"/"+id+"/retry", nil)
		require.Equal(t, http.StatusConflict, r.status)
		_, msg := r.errorOf(t)
		assert.Contains(t, msg, "never enrolled")
		assert.Contains(t, msg, "use restart-clean")
		assert.Equal(t, "manual_intervention", h.mustAdmin(http.StatusOK, "GET", obsPath+"/"+id, nil)["status"], "nothing changed")
		assert.Empty(t, h.starter.stages)
	})
}

func TestResumeContinuesFromTheCheckpointMAASStillShows(t *testing.T) {
	tests := []struct {
		name      string
		cp        domain.Checkpoint
		maas      maas.Status
		wantStart domain.Stage
	}{
		{"commissioned, MAAS Ready", domain.CheckpointCommissioned, maas.StatusReady, domain.StageVerifyHardware},
		{"discovered, commissioning under way", domain.CheckpointDiscovered, maas.StatusCommissioning, domain.StageCommission},
		{"no checkpoint: the start of the attempt", "", maas.StatusNew, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.machines.set("sys-1", tt.maas)
			id := h.stopped(domain.OnboardingManualIntervention, domain.StageHardening, tt.cp)
			got := h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+id+"/resume", nil)
			assert.Equal(t, "pending", got["status"])
			assert.EqualValues(t, 1, got["run"])
			_, at := h.lastStart()
			assert.Equal(t, tt.wantStart, at)
			notes := h.notes(id, "resume")
			require.Len(t, notes, 1)
			assert.Contains(t, notes[0].Detail, "resume by alice", "the default reason names the actor")
			require.Len(t, h.auditFor("onboarding.resume"), 1)
		})
	}
}

func TestResumeRefusedWhenMAASNoLongerMatches(t *testing.T) {
	tests := []struct {
		name string
		cp   domain.Checkpoint
		maas maas.Status // 0 with gone: the machine was deleted
		gone bool
		want string
	}{
		{name: "deployed checkpoint, MAAS Ready", cp: domain.CheckpointDeployed, maas: maas.StatusReady,
			want: "MAAS shows machine sys-1 Ready, the checkpoint deployed expects Deployed: use adopt or retry"},
		{name: "commissioned, failed deployment", cp: domain.CheckpointCommissioned, maas: maas.StatusFailedDeployment,
			want: "MAAS shows machine sys-1 Failed deployment, the checkpoint commissioned expects Ready: use retry or restart-clean"},
		{name: "machine gone", cp: domain.CheckpointDiscovered, gone: true,
			want: "MAAS no longer has machine sys-1, the checkpoint discovered expects New or Commissioning or Testing or Ready: use rerun"},
		{name: "deployed, never enrolled", cp: domain.CheckpointDeployed, maas: maas.StatusDeployed,
			want: "never enrolled and its enrollment token was revoked when the run stopped: use restart-clean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if !tt.gone {
				h.machines.set("sys-1", tt.maas)
			}
			id := h.stopped(domain.OnboardingManualIntervention, domain.StageWaitEnrollment, tt.cp)
			before := h.mustAdmin(http.StatusOK, "GET", obsPath+"/"+id, nil)
			r := h.admin("POST", obsPath+"/"+id+"/resume", nil)
			require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
			code, msg := r.errorOf(t)
			assert.Equal(t, CodeConflict, code)
			assert.Contains(t, msg, tt.want)
			after := h.mustAdmin(http.StatusOK, "GET", obsPath+"/"+id, nil)
			assert.Equal(t, before["updated_at"], after["updated_at"], "nothing changed")
			assert.Empty(t, h.starter.stages)
		})
	}
}

func TestResumeWithMAASUnreachableChangesNothing(t *testing.T) {
	h := newHarness(t)
	h.machines.err = errors.New("dial tcp: connection refused")
	id := h.stopped(domain.OnboardingManualIntervention, domain.StageStorage, domain.CheckpointCommissioned)
	r := h.admin("POST", obsPath+"/"+id+"/resume", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, "manual_intervention", h.mustAdmin(http.StatusOK, "GET", obsPath+"/"+id, nil)["status"])
	assert.Empty(t, h.starter.stages)
}

// A resume of an enrolled node (the checkpoint deployed, MAAS Deployed)
// goes on at the enrollment wait, and the node stays active for it.
func TestResumeEnrolledNodeKeepsItActive(t *testing.T) {
	h := newHarness(t)
	h.machines.set("sys-1", maas.StatusDeployed)
	id := h.stopped(domain.OnboardingManualIntervention, domain.StageCompletionGates, domain.CheckpointDeployed)
	o, err := h.store.GetOnboarding(context.Background(), id)
	require.NoError(t, err)
	now := h.clock.Now().Add(-time.Minute)
	_, err = h.store.UpdateNode(context.Background(), o.NodeID, func(n *domain.Node) error {
		n.Status, n.EnrolledAt = domain.NodeActive, &now
		return nil
	})
	require.NoError(t, err)

	h.mustAdmin(http.StatusOK, "POST", obsPath+"/"+id+"/resume", nil)
	_, at := h.lastStart()
	assert.Equal(t, domain.StageWaitEnrollment, at)
	n, err := h.store.GetNode(context.Background(), o.NodeID)
	require.NoError(t, err)
	assert.Equal(t, domain.NodeActive, n.Status)
}

func TestAllowedOperationsListRetryAndResume(t *testing.T) {
	h := newHarness(t)
	id := h.stopped(domain.OnboardingManualIntervention, domain.StageStorage, domain.CheckpointCommissioned)
	got := h.mustAdmin(http.StatusOK, "GET", obsPath+"/"+id, nil)
	assert.Equal(t, []any{"retry", "resume", "rerun", "restart-clean", "adopt", "cancel"}, got["allowed_operations"])
}
