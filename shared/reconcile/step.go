package reconcile

import (
	"context"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
)

// Step actions: the states of statemachines/reconcile.asl.json, each one
// invocation of the reconcile function.
const (
	StepBegin  = "begin"
	StepSite   = "site"
	StepFinish = "finish"
)

// StepRequest is what started the state machine: a run the API already
// began (RunID), or a schedule tick (Trigger, optional SiteID).
type StepRequest struct {
	RunID   string `json:"run_id,omitempty"`
	SiteID  string `json:"site_id,omitempty"`
	Trigger string `json:"trigger,omitempty"`
}

// StepInput is the reconcile function's payload.
type StepInput struct {
	Action string `json:"action"`
	// Request is the execution input (begin only).
	Request *StepRequest `json:"request,omitempty"`
	RunID   string       `json:"run_id,omitempty"`
	SiteID  string       `json:"site_id,omitempty"`
}

// StepOutput is the reconcile function's answer.
type StepOutput struct {
	RunID string `json:"run_id"`
	// Joined is true when begin found another run under way: the
	// execution ends without touching it.
	Joined bool `json:"joined"`
	// Sites are the sites the run checks (begin).
	Sites []string `json:"sites"`
	// Site is one site's result (site).
	Site *domain.SiteRunInfo `json:"site,omitempty"`
	// Status is the run's status (finish).
	Status string `json:"status,omitempty"`
}

// InvalidStepError is a payload the state machine should never send.
type InvalidStepError struct{ Reason string }

func (e *InvalidStepError) Error() string { return "invalid reconcile step: " + e.Reason }

// Step runs one state of the reconcile state machine. Each step is safe to
// repeat: begin with a run id only reads it, a site step replaces its own
// result and creates items under ids derived from the run, finish sums
// again.
func (r *Runner) Step(ctx context.Context, in StepInput) (StepOutput, error) {
	switch in.Action {
	case StepBegin:
		req := StepRequest{}
		if in.Request != nil {
			req = *in.Request
		}
		var run domain.ReconcileRun
		if req.RunID != "" {
			got, err := r.Store.GetReconcileRun(ctx, req.RunID)
			if err != nil {
				return StepOutput{}, err
			}
			run = got
		} else {
			trigger := req.Trigger
			if trigger == "" {
				trigger = TriggerSchedule
			}
			got, joined, err := r.Begin(ctx, req.SiteID, trigger)
			if err != nil {
				return StepOutput{}, err
			}
			if joined {
				return StepOutput{RunID: got.ID, Joined: true, Sites: []string{}}, nil
			}
			run = got
		}
		sites, err := r.Sites(ctx, run)
		if err != nil {
			return StepOutput{}, err
		}
		if sites == nil {
			sites = []string{}
		}
		return StepOutput{RunID: run.ID, Sites: sites}, nil
	case StepSite:
		if in.RunID == "" || in.SiteID == "" {
			return StepOutput{}, &InvalidStepError{Reason: "site needs run_id and site_id"}
		}
		info, err := r.RunSite(ctx, in.RunID, in.SiteID)
		if err != nil {
			return StepOutput{}, err
		}
		return StepOutput{RunID: in.RunID, Sites: []string{in.SiteID}, Site: &info}, nil
	case StepFinish:
		if in.RunID == "" {
			return StepOutput{}, &InvalidStepError{Reason: "finish needs run_id"}
		}
		run, err := r.Finish(ctx, in.RunID)
		if err != nil {
			return StepOutput{}, err
		}
		return StepOutput{RunID: run.ID, Sites: []string{}, Status: run.Status}, nil
	}
	return StepOutput{}, &InvalidStepError{Reason: fmt.Sprintf("unknown action %q", in.Action)}
}

// RunStarter starts the reconcile state machine for a run the caller
// began.
type RunStarter interface {
	StartReconcile(ctx context.Context, runID string) error
}

// Remote serves the API where runs execute in the reconcile state machine
// (Step Functions, or the embedded runtime locally): Trigger begins the
// run, so the caller gets its id at once, and starts the state machine on
// it; everything else is the Runner's.
type Remote struct {
	*Runner
	Starter RunStarter
}

// Trigger begins a run (or joins the one under way) and starts its
// execution. If the execution cannot start, the run is finished at once so
// its lock does not hold the next run off until the lease ends.
func (m Remote) Trigger(ctx context.Context, siteID string) (domain.ReconcileRun, bool, error) {
	run, joined, err := m.Begin(ctx, siteID, TriggerAPI)
	if err != nil || joined {
		return run, joined, err
	}
	if err := m.Starter.StartReconcile(ctx, run.ID); err != nil {
		if _, ferr := m.Finish(context.WithoutCancel(ctx), run.ID); ferr != nil {
			m.Logger.ErrorContext(ctx, "finish a run whose execution did not start", "run_id", run.ID, "error", ferr.Error())
		}
		return domain.ReconcileRun{}, false, fmt.Errorf("start the reconcile state machine: %w", err)
	}
	return run, false, nil
}
