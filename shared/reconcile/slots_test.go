package reconcile

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// slotHolder creates a pending onboarding of site s1 holding a throttle
// slot.
func (h *harness) slotHolder(t *testing.T, id, host string, executionID string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, h.st.CreateOnboarding(ctx, domain.Onboarding{ID: id, SiteID: "s1", ProfileID: "p", SKUID: "k", Hostname: host,
		Attempt: 1, Status: domain.OnboardingPending, ExecutionID: executionID, CreatedAt: t0}))
	res, err := h.st.TakeSiteSlot(ctx, store.SlotRequest{OnboardingID: id, Attempt: 1, Limit: 2})
	require.NoError(t, err)
	require.True(t, res.Granted)
}

// TestAKilledWorkflowsSlotIsFreedWithItsOnboarding: adopting
// execution_not_running closes the onboarding, and the same write gives
// its throttle slot back.
func TestAKilledWorkflowsSlotIsFreedWithItsOnboarding(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	arn := "arn:aws:states:local:0:execution:onboarding:onboarding-o1-1"
	h.slotHolder(t, "o1", "gpu1", arn)
	h.r.Executions = execs{arn: "TIMED_OUT"}
	h.run(t)
	require.Contains(t, h.open(t), "onboarding:o1 execution_not_running")
	assert.NotContains(t, h.open(t), "onboarding:o1 orphan_slot", "its record still holds it: the execution is the drift")

	_, err := h.r.Resolve(ctx, Resolution{NodeID: "onboarding:o1", Kind: domain.DriftExecutionNotRunning, Action: domain.DriftAdopt, Actor: "ops"})
	require.NoError(t, err)
	held, err := h.st.SiteSlotsHeld(ctx, "s1")
	require.NoError(t, err)
	assert.Zero(t, held)
}

// TestASlotHeldByNobodyIsDriftAndAdoptFreesIt: a holder row whose
// onboarding is gone is orphan_slot drift; adopt frees it and the next run
// closes the item.
func TestASlotHeldByNobodyIsDriftAndAdoptFreesIt(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	arn := "arn:aws:states:local:0:execution:onboarding:onboarding-o2-1"
	h.slotHolder(t, "o1", "gpu1", "arn:aws:states:local:0:execution:onboarding:onboarding-o1-1")
	h.slotHolder(t, "o2", "gpu2", arn)
	h.r.Executions = execs{arn: ExecutionRunning, "arn:aws:states:local:0:execution:onboarding:onboarding-o1-1": ExecutionRunning}
	// The record goes behind the store's back (a restore, a hand edit):
	// its slot stays held by nobody. The key is the store's onboarding key.
	_, err := h.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(store.DefaultTable), Key: map[string]types.AttributeValue{
		store.AttrPK: &types.AttributeValueMemberS{Value: "ONB#o1"}, store.AttrSK: &types.AttributeValueMemberS{Value: "ONB"},
	}})
	require.NoError(t, err)

	h.run(t)
	d, ok := h.open(t)["onboarding:o1 orphan_slot"]
	require.True(t, ok, "open drift: %v", h.open(t))
	assert.Equal(t, "site slot of attempt 1 held by its workflow", d.Expected)
	assert.Equal(t, "onboarding gone", d.Observed)
	assert.Equal(t, "o1", d.OnboardingID)
	assert.NotContains(t, h.open(t), "onboarding:o2 orphan_slot", "a live holder is no drift")
	require.NotEmpty(t, h.bus.events, "a new drift item is published")

	_, err = h.r.Resolve(ctx, Resolution{NodeID: "onboarding:o1", Kind: domain.DriftOrphanSlot, Action: domain.DriftStart, Actor: "ops"})
	var refused *ResolveRefusedError
	require.ErrorAs(t, err, &refused)
	assert.Contains(t, refused.Reason, "adopt frees the slot")
	got, err := h.r.Resolve(ctx, Resolution{NodeID: "onboarding:o1", Kind: domain.DriftOrphanSlot, Action: domain.DriftAdopt, Reason: "restored table", Actor: "ops"})
	require.NoError(t, err)
	assert.Equal(t, "freed 1 slots and 0 queue places of site s1", got.Resolution.Detail)
	held, err := h.st.SiteSlotsHeld(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, 1, held, "o2 keeps its slot")

	h.run(t)
	assert.NotContains(t, h.open(t), "onboarding:o1 orphan_slot")
}

func TestCompareSlots(t *testing.T) {
	d := store.DeadSlots{
		Holders:    []store.SlotHolder{{SiteID: "s1", OnboardingID: "o1", Attempt: 2}},
		Waiters:    []store.SlotWaiter{{SiteID: "s1", OnboardingID: "o1", Attempt: 2}, {SiteID: "s1", OnboardingID: "o3", Attempt: 1}},
		CountWrong: true, Held: 4, Alive: 1,
		Why: map[string]string{"o1": "onboarding completed", "o3": "onboarding on attempt 2"},
	}
	got := compareSlots("s1", d)
	require.Len(t, got, 3, "one item per onboarding, and the count")
	assert.Equal(t, Finding{NodeID: "onboarding:o1", OnboardingID: "o1", Kind: domain.DriftOrphanSlot,
		Expected: "site slot of attempt 2 held by its workflow", Observed: "onboarding completed"}, got[0])
	assert.Equal(t, "queue place of attempt 1 held by its workflow", got[1].Expected)
	assert.Equal(t, Finding{NodeID: "site-slots:s1", Kind: domain.DriftOrphanSlot, Expected: "2 slots held (one per holder)", Observed: "count 4"}, got[2])
	assert.Empty(t, compareSlots("s1", store.DeadSlots{}))
}
