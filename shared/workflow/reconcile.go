package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/maasflow/maasflow/shared/run"
)

// ReconcileInput is the reconcile state machine's execution input: a run
// the API began, or a schedule tick (the first state begins the run).
// shared/reconcile.StepRequest reads it.
type ReconcileInput struct {
	RunID   string `json:"run_id,omitempty"`
	Trigger string `json:"trigger,omitempty"`
}

// reconcileExecutionName names a reconcile execution: after the run it
// serves (Step Functions then refuses a second execution of that run), or
// unique for a schedule tick.
func reconcileExecutionName(in ReconcileInput) string {
	if in.RunID != "" {
		return "reconcile-" + in.RunID
	}
	return "reconcile-tick-" + uuid.NewString()
}

// LocalReconcile starts the reconcile state machine on the embedded
// runtime.
type LocalReconcile struct {
	Engine LocalEngine
	ARN    string
}

// StartReconcile starts an execution for a run the caller began.
func (l LocalReconcile) StartReconcile(ctx context.Context, runID string) error {
	_, err := startReconcile(ctx, run.Local{Runtime: l.Engine}, l.ARN, ReconcileInput{RunID: runID})
	return err
}

// StartTick starts an execution as the schedule does and returns its ARN.
func (l LocalReconcile) StartTick(ctx context.Context) (string, error) {
	return startReconcile(ctx, run.Local{Runtime: l.Engine}, l.ARN, ReconcileInput{Trigger: "schedule"})
}

// SFNReconcile starts the reconcile state machine on Step Functions.
type SFNReconcile struct {
	Client SFNAPI
	ARN    string
}

// StartReconcile starts an execution for a run the caller began.
func (s SFNReconcile) StartReconcile(ctx context.Context, runID string) error {
	_, err := startReconcile(ctx, run.StepFunctions{Client: s.Client}, s.ARN, ReconcileInput{RunID: runID})
	return err
}

func startReconcile(ctx context.Context, engine run.Engine, arn string, in ReconcileInput) (string, error) {
	input, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	execARN, err := engine.Start(ctx, arn, reconcileExecutionName(in), input)
	if err != nil {
		return "", fmt.Errorf("start reconcile execution: %w", err)
	}
	return execARN, nil
}
