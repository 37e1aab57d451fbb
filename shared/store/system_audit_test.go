package store

import (
	"context"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/domain"
)

// TestOutcomesNeedingAnOperatorAreAudited: failed and manual_intervention
// are on the audit trail with the system as actor, written with the status;
// a cancel (an operator's own request, audited by the API) is not.
func TestOutcomesNeedingAnOperatorAreAudited(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		status  domain.OnboardingStatus
		audited bool
	}{{domain.OnboardingFailed, true}, {domain.OnboardingManualIntervention, true}, {domain.OnboardingCancelled, false}} {
		eachBackend(t, func(t *testing.T, mk func(testing.TB) (*Store, *clockwork.FakeClock)) {
			t.Helper()
			t.Run(string(tc.status), func(t *testing.T) {
				s, _ := mk(t)
				runWithToken(t, s, "o1", "h1")
				_, err := s.CloseOnboarding(ctx, "o1", func(o *domain.Onboarding) error {
					o.Status = tc.status
					o.Error = &domain.Failure{Code: "MachineWaitTimeoutError", Message: "waited"}
					return nil
				})
				require.NoError(t, err)
				entries, err := s.ListAudit(ctx, 10)
				require.NoError(t, err)
				if !tc.audited {
					assert.Empty(t, entries)
					return
				}
				require.Len(t, entries, 1)
				assert.Equal(t, SystemActor, entries[0].Actor)
				assert.Equal(t, "onboarding."+string(tc.status), entries[0].Action)
				assert.Equal(t, "onboarding:o1", entries[0].Target)
				assert.Equal(t, string(tc.status)+":MachineWaitTimeoutError", entries[0].Result)
			})
		})
	}
}
