package store

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// openOnboardings creates n pending onboardings of site s1 at attempt 1,
// o1…on.
func openOnboardings(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		o := onboarding(fmt.Sprintf("o%d", i), "s1", fmt.Sprintf("gpu%02d", i))
		o.Attempt = 1
		require.NoError(t, s.CreateOnboarding(context.Background(), o))
	}
}

func take(t *testing.T, s *Store, id string, limit int) SlotResult {
	t.Helper()
	res, err := s.TakeSiteSlot(context.Background(), SlotRequest{OnboardingID: id, Attempt: 1, Limit: limit})
	require.NoError(t, err)
	return res
}

// requireSlots checks the site's count, its holder rows and its queue.
func requireSlots(t *testing.T, s *Store, held int, holders []string, queue []string) {
	t.Helper()
	ctx := context.Background()
	n, err := s.SiteSlotsHeld(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, held, n, "count")
	hs, err := s.ListSlotHolders(ctx, "s1")
	require.NoError(t, err)
	got := []string{}
	for _, h := range hs {
		got = append(got, h.OnboardingID)
	}
	assert.ElementsMatch(t, holders, got, "holders")
	ws, err := s.ListSlotWaiters(ctx, "s1")
	require.NoError(t, err)
	got = []string{}
	for _, w := range ws {
		got = append(got, w.OnboardingID)
	}
	assert.Equal(t, queue, got, "queue, in order")
}

func TestTakeSiteSlotGrantsUpToTheLimitThenQueuesInOrder(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := newTestStore(t)
	openOnboardings(t, s, 4)

	assert.True(t, take(t, s, "o1", 2).Granted)
	assert.True(t, take(t, s, "o2", 2).Granted)
	clk.Advance(1)
	r3 := take(t, s, "o3", 2)
	assert.False(t, r3.Granted)
	assert.True(t, r3.Queued)
	assert.Equal(t, 1, r3.Position)
	assert.Equal(t, domain.StageQueued, r3.Onboarding.Stage)
	assert.Equal(t, domain.OnboardingPending, r3.Onboarding.Status)
	clk.Advance(1)
	r4 := take(t, s, "o4", 2)
	assert.Equal(t, 2, r4.Position)

	// Repeats by the same attempt change nothing.
	again := take(t, s, "o1", 2)
	assert.True(t, again.Granted)
	r3 = take(t, s, "o3", 2)
	assert.False(t, r3.Granted)
	assert.False(t, r3.Queued, "keeps its place")
	assert.Equal(t, 1, r3.Position)
	requireSlots(t, s, 2, []string{"o1", "o2"}, []string{"o3", "o4"})
	o4, err := s.GetOnboarding(ctx, "o4")
	require.NoError(t, err)
	pos, err := s.QueuePosition(ctx, o4)
	require.NoError(t, err)
	assert.Equal(t, 2, pos)

	// A slot given back goes to the first in line, not to whoever asks
	// first.
	_, err = s.CloseOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.Status = domain.OnboardingFailed; return nil })
	require.NoError(t, err)
	requireSlots(t, s, 1, []string{"o2"}, []string{"o3", "o4"})
	r4 = take(t, s, "o4", 2)
	assert.False(t, r4.Granted, "o3 is owed the slot")
	assert.Equal(t, 2, r4.Position)
	assert.True(t, take(t, s, "o3", 2).Granted)
	requireSlots(t, s, 2, []string{"o2", "o3"}, []string{"o4"})
	o3, err := s.GetOnboarding(ctx, "o3")
	require.NoError(t, err)
	pos, err = s.QueuePosition(ctx, o3)
	require.NoError(t, err)
	assert.Zero(t, pos, "holding, not queued")

	// No limit: granted at once, and still counted.
	assert.True(t, take(t, s, "o4", 0).Granted)
	requireSlots(t, s, 3, []string{"o2", "o3", "o4"}, []string{})
}

func TestTakeSiteSlotIsFenced(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	openOnboardings(t, s, 1)
	_, err := s.TakeSiteSlot(ctx, SlotRequest{OnboardingID: "o1", Attempt: 2, Limit: 1})
	require.ErrorAs(t, err, new(*InvalidRecordError), "another attempt")
	fenced := &ItemConflictError{Kind: "x", ID: "o1", Reason: "fenced"}
	_, err = s.TakeSiteSlot(ctx, SlotRequest{OnboardingID: "o1", Attempt: 1, Limit: 1, Fence: func(domain.Onboarding) error { return fenced }})
	assert.Same(t, fenced, err)
	_, err = s.TakeSiteSlot(ctx, SlotRequest{OnboardingID: "nope", Attempt: 1, Limit: 1})
	require.ErrorAs(t, err, new(*ItemNotFoundError))
	requireSlots(t, s, 0, []string{}, []string{})
}

// TestEveryWayOutGivesTheSlotBack: each move out of pending/running, and a
// new attempt, gives the slot and the queue place back in the same write.
func TestEveryWayOutGivesTheSlotBack(t *testing.T) {
	ways := []struct {
		name string
		move func(o *domain.Onboarding)
	}{
		{"completed", func(o *domain.Onboarding) { o.Status = domain.OnboardingCompleted }},
		{"failed", func(o *domain.Onboarding) { o.Status = domain.OnboardingFailed }},
		{"cancelled", func(o *domain.Onboarding) { o.Status = domain.OnboardingCancelled }},
		{"manual_intervention", func(o *domain.Onboarding) { o.Status = domain.OnboardingManualIntervention }},
		{"another attempt", func(o *domain.Onboarding) { o.Attempt++; o.Status = domain.OnboardingPending }},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			ctx := context.Background()
			s, _, _ := newTestStore(t)
			openOnboardings(t, s, 2)
			require.True(t, take(t, s, "o1", 1).Granted)
			require.False(t, take(t, s, "o2", 1).Granted)
			for _, id := range []string{"o1", "o2"} {
				got, err := s.UpdateOnboarding(ctx, id, func(o *domain.Onboarding) error { w.move(o); return nil })
				require.NoError(t, err)
				assert.Nil(t, got.Slot, "the record holds nothing")
			}
			requireSlots(t, s, 0, []string{}, []string{})
		})
	}
}

func TestARunningOnboardingQueuesAsPending(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	openOnboardings(t, s, 2)
	require.True(t, take(t, s, "o1", 1).Granted)
	_, err := s.UpdateOnboarding(ctx, "o2", func(o *domain.Onboarding) error {
		o.Status, o.Stage = domain.OnboardingRunning, domain.StageDeploy // reopened at a later stage
		return nil
	})
	require.NoError(t, err)
	r := take(t, s, "o2", 1)
	assert.False(t, r.Granted)
	assert.Equal(t, domain.OnboardingPending, r.Onboarding.Status)
	assert.Equal(t, domain.StageQueued, r.Onboarding.Stage)
}

func TestMovesThatKeepTheSlotKeepIt(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	openOnboardings(t, s, 1)
	require.True(t, take(t, s, "o1", 1).Granted)
	_, err := s.UpdateOnboarding(ctx, "o1", func(o *domain.Onboarding) error {
		o.Status, o.Stage = domain.OnboardingRunning, domain.StageDeploy
		return nil
	})
	require.NoError(t, err)
	requireSlots(t, s, 1, []string{"o1"}, []string{})
	assert.True(t, take(t, s, "o1", 1).Granted, "a retry of the take")
}

// TestConcurrentTakesNeverPassTheLimit: the count's condition is the
// limit, whoever races.
func TestConcurrentTakesNeverPassTheLimit(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	openOnboardings(t, s, 12)
	var wg sync.WaitGroup
	granted := make(chan string, 12)
	for i := 1; i <= 12; i++ {
		wg.Go(func() {
			res, err := s.TakeSiteSlot(ctx, SlotRequest{OnboardingID: fmt.Sprintf("o%d", i), Attempt: 1, Limit: 3})
			if !assert.NoError(t, err) {
				return
			}
			if res.Granted {
				granted <- res.Onboarding.ID
			}
		})
	}
	wg.Wait()
	close(granted)
	assert.Len(t, granted, 3)
	n, err := s.SiteSlotsHeld(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	ws, err := s.ListSlotWaiters(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, ws, 9)
}

// deleteOnboardingRow removes an onboarding's record behind the store's
// back, as a restore or a hand edit would: its slot is then dead.
func deleteOnboardingRow(t *testing.T, s *Store, db DynamoDB, id string) {
	t.Helper()
	_, err := db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(s.table), Key: onboardingKey(id).av()})
	require.NoError(t, err)
	s.recent.take(onboardingKey(id))
}

func TestDeadSlotsAreFoundAndFreed(t *testing.T) {
	ctx := context.Background()
	s, _, db := newTestStore(t)
	openOnboardings(t, s, 4)
	require.True(t, take(t, s, "o1", 2).Granted)
	require.True(t, take(t, s, "o2", 2).Granted)
	require.False(t, take(t, s, "o3", 2).Granted)
	deleteOnboardingRow(t, s, db, "o1")
	deleteOnboardingRow(t, s, db, "o3")

	d, err := s.FindDeadSlots(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, d.Holders, 1)
	assert.Equal(t, "o1", d.Holders[0].OnboardingID)
	require.Len(t, d.Waiters, 1)
	assert.Equal(t, "o3", d.Waiters[0].OnboardingID)
	assert.Equal(t, 1, d.Alive)
	assert.False(t, d.CountWrong, "the count matches the rows; one of them is dead")

	d, err = s.FreeDeadSlots(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, d.Holders, 1)
	requireSlots(t, s, 1, []string{"o2"}, []string{})
	d, err = s.FreeDeadSlots(ctx, "s1")
	require.NoError(t, err)
	assert.True(t, d.Empty(), "nothing more to free")
}

// TestTheFirstInLineFreesADeadSlot: a full site whose slot is dead does
// not keep its queue waiting for reconciliation.
func TestTheFirstInLineFreesADeadSlot(t *testing.T) {
	s, clk, db := newTestStore(t)
	openOnboardings(t, s, 3)
	require.True(t, take(t, s, "o1", 1).Granted)
	require.False(t, take(t, s, "o2", 1).Granted)
	clk.Advance(1)
	require.False(t, take(t, s, "o3", 1).Granted)
	deleteOnboardingRow(t, s, db, "o1")

	r3 := take(t, s, "o3", 1)
	assert.False(t, r3.Granted, "second in line")
	r2 := take(t, s, "o2", 1)
	assert.True(t, r2.Granted, "first in line freed the dead slot and took it")
	requireSlots(t, s, 1, []string{"o2"}, []string{"o3"})
}

// TestADeadPlaceAheadIsSkipped: a queued onboarding whose record is gone
// does not hold up the ones behind it.
func TestADeadPlaceAheadIsSkipped(t *testing.T) {
	s, clk, db := newTestStore(t)
	openOnboardings(t, s, 3)
	require.True(t, take(t, s, "o1", 1).Granted)
	require.False(t, take(t, s, "o2", 1).Granted)
	clk.Advance(1)
	require.False(t, take(t, s, "o3", 1).Granted)
	deleteOnboardingRow(t, s, db, "o2")
	_, err := s.UpdateOnboarding(context.Background(), "o1", func(o *domain.Onboarding) error {
		o.Status = domain.OnboardingCompleted
		return nil
	})
	require.NoError(t, err)
	assert.True(t, take(t, s, "o3", 1).Granted)
	requireSlots(t, s, 1, []string{"o3"}, []string{})
}

func TestAWrongCountIsRepaired(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	openOnboardings(t, s, 1)
	require.True(t, take(t, s, "o1", 3).Granted)
	item, err := marshalItem(siteSlots{SiteID: "s1", Held: 3, Version: 7}, slotsKey("s1"), entitySlots, nil)
	require.NoError(t, err)
	require.NoError(t, s.write(ctx, s.putIfVersion(item, 1)))

	d, err := s.FindDeadSlots(ctx, "s1")
	require.NoError(t, err)
	assert.True(t, d.CountWrong)
	assert.Equal(t, 3, d.Held)
	_, err = s.FreeDeadSlots(ctx, "s1")
	require.NoError(t, err)
	requireSlots(t, s, 1, []string{"o1"}, []string{})
}

// TestAGiveBackAfterTheSlotWasFreedAsDead: a slot freed by a repair is not
// given back twice.
func TestAGiveBackAfterTheSlotWasFreedAsDead(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	openOnboardings(t, s, 2)
	require.True(t, take(t, s, "o1", 2).Granted)
	require.True(t, take(t, s, "o2", 2).Granted)
	require.NoError(t, s.write(ctx, s.deleteHolder("s1", "o1", 1)), "a repair freed it")
	_, err := s.CloseOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.Status = domain.OnboardingCancelled; return nil })
	require.NoError(t, err)
	requireSlots(t, s, 2, []string{"o2"}, []string{})
	_, err = s.FreeDeadSlots(ctx, "s1")
	require.NoError(t, err)
	requireSlots(t, s, 1, []string{"o2"}, []string{})
}
