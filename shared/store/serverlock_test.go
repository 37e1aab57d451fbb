package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// TestOneOpenOnboardingPerServer: the lock covers the BMC address, and the
// PXE MAC and MAAS machine once known, not only the host name.
func TestOneOpenOnboardingPerServer(t *testing.T) {
	ctx := context.Background()
	eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
		t.Helper()
		s, _ := mk(t)
		a := onboarding("o1", "s1", "gpu01")
		a.IPMIIP = "10.0.0.21"
		require.NoError(t, s.CreateOnboarding(ctx, a))

		// Same BMC, another host name: refused, naming the BMC.
		b := onboarding("o2", "s1", "gpu99")
		b.IPMIIP = "::ffff:10.0.0.21"
		var oe *OpenOnboardingExistsError
		require.ErrorAs(t, s.CreateOnboarding(ctx, b), &oe)
		assert.Equal(t, OpenOnboardingExistsError{SiteID: "s1", Hostname: "gpu01", OnboardingID: "o1", Identity: LockBMC, Value: "10.0.0.21"}, *oe)
		_, err := s.GetOnboarding(ctx, "o2")
		require.ErrorAs(t, err, new(*ItemNotFoundError), "nothing half-written")

		// The same BMC address on another site is another server.
		c := a
		c.ID, c.SiteID = "o3", "s2"
		require.NoError(t, s.CreateOnboarding(ctx, c))

		// The PXE MAC and the MAAS machine, once learned, are locked too.
		_, err = s.UpdateOnboarding(ctx, "o1", func(o *domain.Onboarding) error {
			o.PXEMAC, o.MAASSystemID = "aa:bb:cc:00:11:22", "abc123"
			return nil
		})
		require.NoError(t, err)
		d := onboarding("o4", "s1", "gpu02")
		require.NoError(t, s.CreateOnboarding(ctx, d))
		_, err = s.UpdateOnboarding(ctx, "o4", func(o *domain.Onboarding) error { o.PXEMAC = "AA:BB:CC:00:11:22"; return nil })
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, LockPXEMAC, oe.Identity)
		assert.Equal(t, "o1", oe.OnboardingID)
		_, err = s.UpdateOnboarding(ctx, "o4", func(o *domain.Onboarding) error { o.MAASSystemID = "abc123"; return nil })
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, LockMachine, oe.Identity)
		got, err := s.GetOnboarding(ctx, "o4")
		require.NoError(t, err)
		assert.Empty(t, got.PXEMAC, "a refused update changes nothing")

		// Closing o1 frees every identity it held.
		_, err = s.UpdateOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.Status = domain.OnboardingFailed; return nil })
		require.NoError(t, err)
		for _, id := range [][2]string{{LockHostname, "gpu01"}, {LockBMC, "10.0.0.21"}, {LockPXEMAC, "aa:bb:cc:00:11:22"}, {LockMachine, "abc123"}} {
			_, found, err := s.FindServerLock(ctx, "s1", id[0], id[1])
			require.NoError(t, err)
			assert.False(t, found, "%s %s released", id[0], id[1])
		}
		_, err = s.UpdateOnboarding(ctx, "o4", func(o *domain.Onboarding) error {
			o.PXEMAC, o.MAASSystemID = "aa:bb:cc:00:11:22", "abc123"
			return nil
		})
		require.NoError(t, err)
		holder, found, err := s.FindServerLock(ctx, "s1", LockPXEMAC, "AA:BB:CC:00:11:22")
		require.NoError(t, err)
		assert.True(t, found)
		assert.Equal(t, "o4", holder)
		require.NoError(t, s.CreateOnboarding(ctx, b), "the BMC is free again")
	})
}

// TestParallelOnboardingsOfOneBMC reproduces a defect a security review found: parallel
// onboardings with one ipmi_ip and distinct host names; one wins.
func TestParallelOnboardingsOfOneBMC(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			o := onboarding(fmt.Sprintf("o%d", i), "s1", fmt.Sprintf("gpu%02d", i))
			o.IPMIIP = "10.9.9.9"
			errs[i] = s.CreateOnboarding(ctx, o)
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		var oe *OpenOnboardingExistsError
		if assert.ErrorAs(t, err, &oe) {
			assert.Equal(t, LockBMC, oe.Identity)
		}
	}
	assert.Equal(t, 1, wins)
}

// runWithToken is an onboarding in wait_enrollment whose deploy handed the
// node token hash.
func runWithToken(t *testing.T, s *Store, id, hash string) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, s.CreateOnboarding(ctx, onboarding(id, "s1", "host-"+id)))
	require.NoError(t, s.PutEnrollmentToken(ctx, domain.EnrollmentToken{
		Hash: hash, NodeID: "n-" + id, OnboardingID: id, Attempt: 1, ExpiresAt: t0.Add(time.Hour),
	}))
	_, err := s.UpdateOnboarding(ctx, id, func(o *domain.Onboarding) error {
		o.Status, o.Stage, o.Attempt, o.EnrollmentTokenHash = domain.OnboardingRunning, domain.StageWaitEnrollment, 1, hash
		return nil
	})
	require.NoError(t, err)
}

// TestClosingARunRevokesItsToken: cancel, failure (enrollment timeout) and
// manual intervention revoke the run's token in the close's transaction;
// the node is then refused with a reason naming the closed run, flagged
// once for the timeline.
func TestClosingARunRevokesItsToken(t *testing.T) {
	ctx := context.Background()
	for _, status := range []domain.OnboardingStatus{domain.OnboardingCancelled, domain.OnboardingFailed, domain.OnboardingManualIntervention} {
		eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
			t.Helper()
			t.Run(string(status), func(t *testing.T) {
				s, _ := mk(t)
				runWithToken(t, s, "o1", "h1")
				_, err := s.CloseOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.Status = status; return nil })
				require.NoError(t, err)
				tok, err := s.GetEnrollmentToken(ctx, "h1")
				require.NoError(t, err)
				require.NotNil(t, tok.RevokedAt)

				_, err = s.ConsumeEnrollmentToken(ctx, "h1", "n-o1", t0.Add(time.Minute))
				var re *TokenRejectedError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, TokenRejectedError{Reason: TokenWorkflowClosed, OnboardingID: "o1", Attempt: 1, FirstRefusal: true}, *re)
				_, err = s.ConsumeEnrollmentToken(ctx, "h1", "n-o1", t0.Add(2*time.Minute))
				require.ErrorAs(t, err, &re)
				assert.Equal(t, TokenWorkflowClosed, re.Reason)
				assert.False(t, re.FirstRefusal, "flagged once")
			})
		})
	}
}

func TestCloseOnboardingRules(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newTestStore(t)
	runWithToken(t, s, "o1", "h1")

	// Only a close may go through CloseOnboarding.
	_, err := s.CloseOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.Stage = domain.StageDone; return nil })
	require.ErrorAs(t, err, new(*InvalidRecordError))
	tok, err := s.GetEnrollmentToken(ctx, "h1")
	require.NoError(t, err)
	assert.Nil(t, tok.RevokedAt)

	// A consumed token stays consumed: the node enrolled before the close.
	_, err = s.ConsumeEnrollmentToken(ctx, "h1", "n-o1", t0)
	require.NoError(t, err)
	_, err = s.CloseOnboarding(ctx, "o1", func(o *domain.Onboarding) error { o.Status = domain.OnboardingCancelled; return nil })
	require.NoError(t, err)
	tok, err = s.GetEnrollmentToken(ctx, "h1")
	require.NoError(t, err)
	assert.NotNil(t, tok.ConsumedAt)
	assert.Nil(t, tok.RevokedAt)

	// A token of an earlier attempt is refused as such.
	runWithToken(t, s, "o2", "h2")
	_, err = s.UpdateOnboarding(ctx, "o2", func(o *domain.Onboarding) error { o.Attempt = 2; return nil })
	require.NoError(t, err)
	_, err = s.ConsumeEnrollmentToken(ctx, "h2", "n-o2", t0)
	var re *TokenRejectedError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, TokenStaleAttempt, re.Reason)
	assert.True(t, re.FirstRefusal)
}

// TestEnrollAndCloseRace: an enrollment and a cancel of the same run
// racing; whichever lands first, the records agree: a consumed token was
// accepted while the run was open, a revoked one was refused.
func TestEnrollAndCloseRace(t *testing.T) {
	ctx := context.Background()
	for i := range 20 {
		s, _, _ := newTestStore(t)
		id, hash := fmt.Sprintf("o%d", i), fmt.Sprintf("h%d", i)
		runWithToken(t, s, id, hash)
		var consumeErr, closeErr error
		var wg sync.WaitGroup
		wg.Go(func() { _, consumeErr = s.ConsumeEnrollmentToken(ctx, hash, "n-"+id, t0) })
		wg.Go(func() {
			_, closeErr = s.CloseOnboarding(ctx, id, func(o *domain.Onboarding) error { o.Status = domain.OnboardingCancelled; return nil })
		})
		wg.Wait()
		require.NoError(t, closeErr)
		tok, err := s.GetEnrollmentToken(ctx, hash)
		require.NoError(t, err)
		if consumeErr == nil {
			assert.NotNil(t, tok.ConsumedAt)
			assert.Nil(t, tok.RevokedAt)
			continue
		}
		var re *TokenRejectedError
		require.ErrorAs(t, consumeErr, &re)
		assert.Equal(t, TokenWorkflowClosed, re.Reason)
		assert.Nil(t, tok.ConsumedAt)
		assert.NotNil(t, tok.RevokedAt)
	}
}
