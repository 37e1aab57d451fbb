package localstack

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/store"
)

// interruptedCode is the failure code of an onboarding whose execution died
// with the previous local stack process.
const interruptedCode = "LocalStackRestarted"

// failInterrupted closes the onboardings a previous run left pending or
// running. Their executions lived in that process's memory and are gone;
// leaving them open would hold their hosts' locks for ever. Closing them as
// failed, with a reason and a timeline note, tells the operator to start
// again (discovery adopts whatever state the machine reached).
func failInterrupted(ctx context.Context, st *store.Store) (int, error) {
	n := 0
	for _, status := range []domain.OnboardingStatus{domain.OnboardingPending, domain.OnboardingRunning} {
		cursor := ""
		for {
			page, err := st.ListOnboardings(ctx, store.OnboardingFilter{Status: status, Limit: 200, Cursor: cursor})
			if err != nil {
				return n, fmt.Errorf("list %s onboardings: %w", status, err)
			}
			for _, o := range page.Items {
				if err := failOne(ctx, st, o); err != nil {
					return n, err
				}
				n++
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
	}
	return n, nil
}

func failOne(ctx context.Context, st *store.Store, o domain.Onboarding) error {
	const msg = "the local stack stopped while this onboarding ran; start a new onboarding"
	updated, err := st.UpdateOnboarding(ctx, o.ID, func(cur *domain.Onboarding) error {
		if !domain.IsOpenStatus(cur.Status) || cur.Status == domain.OnboardingManualIntervention {
			return nil
		}
		cur.Status = domain.OnboardingFailed
		cur.Error = &domain.Failure{Code: interruptedCode, Message: msg, Stage: cur.Stage}
		return nil
	})
	if err != nil {
		return fmt.Errorf("close interrupted onboarding %s: %w", o.ID, err)
	}
	return st.AppendOnboardingEvents(ctx, domain.TimelineEntry{
		OnboardingID: o.ID, Time: updated.UpdatedAt, Attempt: updated.Attempt,
		Kind: domain.TimelineNote, Stage: updated.Stage, Detail: msg,
	})
}
