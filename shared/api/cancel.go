package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/logfield"
)

// cancelRequest is the optional body of POST …/onboardings/{id}/cancel.
type cancelRequest struct {
	Reason string `json:"reason"`
}

const (
	// maxCancelReason bounds the operator's reason; it becomes the failure
	// message and the execution's stop cause.
	maxCancelReason = 500
	// cancelledCode is the failure code of a cancelled onboarding.
	cancelledCode = "Cancelled"
)

// cancelOnboarding closes an open onboarding as cancelled (requirements API boundary §4.3):
// the workflow execution is stopped first, then the record is closed, which
// releases the host lock in the same write. Stopping first means no state
// of the run starts after the close, so FinishOnboarding cannot overwrite
// it; an activity already in flight finds the record closed, because the
// activities change an onboarding only while it is open. If the stop fails
// nothing is changed. MAAS is not touched: what to do with the machine is
// the operator's decision.
func (s *server) cancelOnboarding(rq *request) (int, any, error) {
	in, err := decodeCancel(rq)
	if err != nil {
		return 0, nil, err
	}
	ctx := rq.ctx()
	o, err := s.store.GetOnboarding(ctx, rq.r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if !domain.IsOpenStatus(o.Status) {
		return 0, nil, alreadyClosed(o)
	}
	message := in.Reason
	if message == "" {
		message = "cancelled by " + rq.actor
	}
	log := rq.log.With(logfield.OnboardingID, o.ID, logfield.SiteID, o.SiteID, logfield.NodeID, o.NodeID, logfield.Hostname, o.Hostname)

	if err := stopRun(s, rq, onboardingKind(), o, message); err != nil {
		return 0, nil, err
	}

	// The execution is stopped: the close must land even if the caller
	// goes away, or the onboarding would stay open with nothing running.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.DetachedWriteTimeout)
	defer cancel()
	now := s.clock.Now().UTC()
	prevStatus := o.Status
	// CloseOnboarding revokes the run's enrollment token in the same write:
	// a node that enrolls after the cancel is refused.
	updated, err := s.store.CloseOnboarding(wctx, o.ID, func(cur *domain.Onboarding) error {
		if !domain.IsOpenStatus(cur.Status) {
			// The run ended between the read and the stop.
			return alreadyClosed(*cur)
		}
		if cur.Attempt != o.Attempt {
			return &StatusError{Status: http.StatusConflict, Code: CodeConflict,
				Message: fmt.Sprintf("onboarding %s started attempt %d meanwhile; read it again and retry", cur.ID, cur.Attempt)}
		}
		prevStatus = cur.Status
		cur.Status = domain.OnboardingCancelled
		cur.Error = &domain.Failure{Code: cancelledCode, Message: message, Stage: cur.Stage}
		cur.CompletedAt = &now
		cur.UpdatedAt = now
		// The wait it belonged to is gone with the execution.
		cur.EnrollmentTaskToken = ""
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	if err := s.store.AppendOnboardingEvents(wctx, domain.TimelineEntry{
		OnboardingID: updated.ID, Time: now, Attempt: updated.Attempt, Kind: domain.TimelineNote, Stage: updated.Stage,
		Outcome: string(domain.OnboardingCancelled), Source: "cancel",
		Detail: fmt.Sprintf("status cancelled (was %s) at stage %s: %s", prevStatus, stageOrStart(string(updated.Stage)), message),
	}); err != nil {
		// The onboarding is closed; only the note is missing.
		log.ErrorContext(ctx, "record the cancel on the timeline", "error", err.Error())
	}
	log.InfoContext(ctx, "onboarding cancelled", "previous_status", prevStatus, "stage", updated.Stage)
	return http.StatusOK, updated, nil
}

// decodeCancel reads the optional body: none (or only white space) means
// no reason.
func decodeCancel(rq *request) (cancelRequest, error) {
	var in cancelRequest
	b, err := readOptionalBody(rq)
	if err != nil || len(b) == 0 {
		return in, err
	}
	if err := decodeStrict(b, &in, ""); err != nil {
		return in, err
	}
	in.Reason = strings.TrimSpace(in.Reason)
	if err := checkText("reason", in.Reason, false, maxCancelReason); err != nil {
		return in, err
	}
	return in, nil
}

func alreadyClosed(o domain.Onboarding) *StatusError {
	return &StatusError{Status: http.StatusConflict, Code: CodeConflict,
		Message: fmt.Sprintf("onboarding %s is already %s; only pending, running or manual_intervention onboardings can be cancelled", o.ID, o.Status)}
}

func stageOrStart(stage string) string {
	if stage == "" {
		return "start"
	}
	return stage
}
