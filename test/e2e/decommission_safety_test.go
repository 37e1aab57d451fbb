package e2e

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// rowsAfter returns the decommission's timeline rows after the first row
// from source whose detail holds the cancel's reason.
func rowsAfter(d map[string]any, source string) (after []map[string]any, found bool) {
	for _, r := range d["timeline"].([]any) {
		row := r.(map[string]any)
		if found {
			after = append(after, row)
			continue
		}
		found = row["source"] == source
	}
	return after, found
}

// TestHalfErasedMachineNeverReturnsToService: a full decommission whose
// erase fails stops at release (MAAS: Failed disk erasing); a rerun stops
// at the drain; a cancel then must not put the node back in service,
// because the first attempt already released the machine and began
// erasing it. The same with a rerun cancelled at once. The stopped
// execution writes nothing after the cancel's note.
func TestHalfErasedMachineNeverReturnsToService(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)

	t.Run("rerun stops at the drain, then cancel", func(t *testing.T) {
		nodeID, _ := e.onboarded(f, "gpu-hx1", "10.10.14.11", "52:54:00:00:e1:01", map[string]any{"erase_failures": 1})
		id := e.decommission(nodeID, "full")
		d := e.waitDecommission(id)
		require.Equal(t, "manual_intervention", d["status"], d)
		require.Equal(t, "EraseFailed", errorCode(d))

		e.allocation(nodeID, "alloc-late", "release_failed")
		e.recoverDecommission(id, domain.OpRerun, map[string]any{"reason": "try again"})
		d = e.waitDecommission(id)
		require.Equal(t, "manual_intervention", d["status"], d)
		require.Equal(t, "drain", d["stage"])

		c := e.recoverDecommission(id, domain.OpCancel, map[string]any{"reason": "give up"})
		assert.Equal(t, "cancelled", c["status"])
		assert.Equal(t, "retired", e.node(nodeID)["status"], "attempt 1 released and began erasing the machine")
		notes := e.decomNotes(id, "cancel")
		require.Len(t, notes, 1)
		assert.Contains(t, notes[0], "an attempt of this decommission released the machine")
	})

	t.Run("rerun cancelled at once", func(t *testing.T) {
		nodeID, _ := e.onboarded(f, "gpu-hx2", "10.10.14.21", "52:54:00:00:e2:01", map[string]any{"erase_failures": 1})
		id := e.decommission(nodeID, "full")
		require.Equal(t, "manual_intervention", e.waitDecommission(id)["status"])

		e.recoverDecommission(id, domain.OpRerun, nil)
		status, body := e.raw("POST", e.stack.APIURL+"/api/v1/admin/decommissions/"+id+"/cancel", e.stack.AdminToken, map[string]any{"reason": "at once"})
		require.Equal(t, http.StatusOK, status, "%s", body)
		assert.Equal(t, "retired", e.node(nodeID)["status"])

		// Once the cancel answered, the stopped run writes nothing more.
		d := e.decommissionRecord(id)
		after, found := rowsAfter(d, "cancel")
		require.True(t, found, "the cancel's note")
		assert.Empty(t, after, "rows after the cancel: %v", after)
		assert.Equal(t, "cancelled", d["status"])
	})
}

// TestConcurrentRecoveryAnswersAgree: retries, a rerun and a cancel posted
// at once at a stopped decommission: every 2xx that starts a run carries
// its execution id and a live status, every other answer is 409, and the
// record ends as the answers say; a cancel that answered 200 leaves a
// cancelled record with the node out of service.
func TestConcurrentRecoveryAnswersAgree(t *testing.T) {
	t.Parallel()
	e := startStack(t)
	f := e.setup(nil, nil)
	nodeID, _ := e.onboarded(f, "gpu-hx3", "10.10.14.31", "52:54:00:00:e3:01", map[string]any{"erase_failures": 3})
	id := e.decommission(nodeID, "full")
	require.Equal(t, "manual_intervention", e.waitDecommission(id)["status"])

	ops := []string{"retry", "rerun", "retry", "cancel", "retry", "rerun"}
	type answer struct {
		status int
		body   map[string]any
	}
	answers := make([]answer, len(ops))
	var wg sync.WaitGroup
	for i, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := e.raw("POST", e.stack.APIURL+"/api/v1/admin/decommissions/"+id+"/"+op, e.stack.AdminToken, nil)
			var out map[string]any
			_ = json.Unmarshal(body, &out)
			answers[i] = answer{status, out}
		}()
	}
	wg.Wait()
	cancelled := false
	for i, a := range answers {
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, a.status, "%s: %v", ops[i], a.body)
		if a.status != http.StatusOK {
			continue
		}
		if ops[i] == "cancel" {
			cancelled = true
			assert.Equal(t, "cancelled", a.body["status"])
			continue
		}
		assert.NotEmpty(t, a.body["execution_id"], "%s: a 2xx carries the run it started: %v", ops[i], a.body)
		assert.NotEqual(t, "cancelled", a.body["status"], "%s answered 200 with the cancel's record", ops[i])
	}
	final := e.waitDecommission(id)
	if cancelled {
		assert.Equal(t, "cancelled", final["status"])
		assert.Equal(t, "retired", e.node(nodeID)["status"])
	} else {
		assert.NotEqual(t, "cancelled", final["status"])
	}
}
