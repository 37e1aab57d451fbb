package api

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/maas"
)

// walkMAAS is one machine as MAAS keeps it, by MAAS's release rules
// (maas-behaviour §5): a release with erase goes to Disk erasing, a failed
// erase to Failed disk erasing, abort of Disk erasing to Failed disk
// erasing, a release by hand to Ready. erased records that the machine was
// released (and its disks at least partly erased) since its deploy.
type walkMAAS struct {
	mu     sync.Mutex
	status maas.Status
	erased bool
}

func (m *walkMAAS) GetMachine(_ context.Context, _, systemID string) (maas.Machine, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maas.Machine{SystemID: systemID, Status: m.status}, nil
}

func (m *walkMAAS) AbortMachine(_ context.Context, _, systemID, _ string) (maas.Machine, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.status
	if m.status == maas.StatusDiskErasing {
		m.status = maas.StatusFailedDiskErasing
	}
	return maas.Machine{SystemID: systemID, Status: prev}, nil
}

func (m *walkMAAS) set(st maas.Status, erased bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status = st
	m.erased = m.erased || erased
}

func (m *walkMAAS) get() (maas.Status, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status, m.erased
}

// TestNodeActiveOnlyWhileDeployedInEveryDecommissionInterleaving walks
// every order in which a full decommission's own steps (its release with
// erase, the erase failing, a drain stopping the run) and an operator's
// operations (rerun, retry, cancel, adopt, a release by hand in MAAS) can
// arrive (and a freeze, mark-manual-intervention), and after every step checks the one rule a node in service must
// keep: node active ⇒ MAAS shows the machine Deployed and nothing released
// or erased it since. Each operation answers 200 where the record's state
// allows it (or 409 naming why), never anything else.
func TestNodeActiveOnlyWhileDeployedInEveryDecommissionInterleaving(t *testing.T) {
	sets := [][]string{
		{"release", "erase_fails", "rerun", "retry", "cancel", "adopt"},
		{"release", "erase_fails", "rerun", "drain_stops", "cancel"},
		{"release", "erase_fails", "retry", "cancel", "adopt"},
		{"release", "erase_fails", "rerun", "retry", "cancel"},
		{"release", "erase_fails", "by_hand", "adopt", "cancel"},
		{"drain_stops", "release", "rerun", "cancel", "by_hand"},
		{"release", "mark-manual-intervention", "rerun", "erase_fails", "cancel"},
	}
	seen := map[string]bool{}
	for _, set := range sets {
		for _, order := range permutations(set) {
			name := strings.Join(order, ",")
			if seen[name] {
				continue
			}
			seen[name] = true
			t.Run(name, func(t *testing.T) {
				m := &walkMAAS{status: maas.StatusDeployed}
				h, _ := decomHarness(t, m)
				seedDecommission(t, h, domain.DecommissionRunning, domain.DecomStageDrain, false)
				for _, step := range order {
					walkStep(t, h, m, step)
					nodeInServiceOnlyWhileDeployed(t, h, m, step)
				}
			})
		}
	}
}

// walkStep plays one step against dec-1. The workflow's steps act only on
// a live run (pending or running), as the activities do.
func walkStep(t *testing.T, h *harness, m *walkMAAS, step string) {
	t.Helper()
	ctx := context.Background()
	d, err := h.store.GetDecommission(ctx, "dec-1")
	require.NoError(t, err)
	live := d.Status == domain.DecommissionPending || d.Status == domain.DecommissionRunning
	st, _ := m.get()
	run := func(change func(d *domain.Decommission)) {
		_, err := h.store.UpdateDecommission(ctx, "dec-1", func(cur *domain.Decommission) error {
			change(cur)
			return nil
		})
		require.NoError(t, err)
	}
	switch step {
	case "release": // ReleaseMachine: the mark first, then the erasing release
		if !live || (st != maas.StatusDeployed && st != maas.StatusFailedDiskErasing) {
			return
		}
		now := h.clock.Now().UTC()
		run(func(cur *domain.Decommission) {
			cur.Status, cur.Stage = domain.DecommissionRunning, domain.DecomStageRelease
			if cur.ReleaseStartedAt == nil {
				cur.ReleaseStartedAt = &now
			}
			cur.Erase.StartedAt = &now
		})
		m.set(maas.StatusDiskErasing, true)
	case "erase_fails": // CheckRelease sees Failed disk erasing: the run stops for an operator
		if st != maas.StatusDiskErasing {
			return
		}
		m.set(maas.StatusFailedDiskErasing, true)
		if live && d.Stage == domain.DecomStageRelease {
			run(func(cur *domain.Decommission) {
				cur.Status = domain.DecommissionManualIntervention
				cur.Error = &domain.Failure{Code: "EraseFailed", Message: "Failed disk erasing", Stage: domain.Stage(cur.Stage)}
			})
		}
	case "drain_stops": // DrainAllocations: an allocation cannot be released
		if !live || (d.Stage != domain.DecomStageStart && d.Stage != domain.DecomStageDrain) {
			return
		}
		run(func(cur *domain.Decommission) {
			cur.Status, cur.Stage = domain.DecommissionManualIntervention, domain.DecomStageDrain
			cur.Error = &domain.Failure{Code: "DrainFailedError", Message: "allocation a1 is release_failed", Stage: domain.Stage(domain.DecomStageDrain)}
		})
	case "by_hand": // an operator releases the stopped decommission's machine in MAAS without erase
		// (once the decommission is closed, MAAS drift is reconciliation's, docs/reconciliation.md)
		if d.Status == domain.DecommissionManualIntervention && st != maas.StatusReady {
			m.set(maas.StatusReady, true)
		}
	default: // rerun, retry, cancel, adopt, mark-manual-intervention
		op := domain.RecoveryOperation(step)
		r := h.admin("POST", "/api/v1/admin/decommissions/dec-1/"+step, map[string]any{"reason": "walk"})
		switch {
		case !domain.DecommissionAllows(d.Status, d.Stage, op):
			require.Equal(t, http.StatusConflict, r.status, "%s", r.body)
		case op == domain.OpAdopt:
			require.Contains(t, []int{http.StatusOK, http.StatusConflict}, r.status, "%s", r.body)
		default:
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		}
		if r.status == http.StatusOK && op != domain.OpCancel && op != domain.OpMarkManualIntervention {
			run(func(cur *domain.Decommission) { cur.Status = domain.DecommissionRunning }) // BeginDecommission
		}
	}
}

// nodeInServiceOnlyWhileDeployed is the walk's invariant.
func nodeInServiceOnlyWhileDeployed(t *testing.T, h *harness, m *walkMAAS, step string) {
	t.Helper()
	n, err := h.store.GetNode(context.Background(), "node-1")
	require.NoError(t, err)
	st, erased := m.get()
	if n.Status == domain.NodeActive {
		assert.True(t, st == maas.StatusDeployed && !erased,
			"after %s the node is active while MAAS shows %s (released or erased since the deploy: %v)", step, st, erased)
	}
	d, err := h.store.GetDecommission(context.Background(), "dec-1")
	require.NoError(t, err)
	if d.Status == domain.DecommissionCancelled && erased {
		assert.Equal(t, domain.NodeRetired, n.Status, "a cancel after a release retires the node")
	}
}
