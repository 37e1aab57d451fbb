package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/google/uuid"
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
	_, err := l.start(ctx, ReconcileInput{RunID: runID})
	return err
}

// StartTick starts an execution as the schedule does and returns its ARN.
func (l LocalReconcile) StartTick(ctx context.Context) (string, error) {
	return l.start(ctx, ReconcileInput{Trigger: "schedule"})
}

func (l LocalReconcile) start(ctx context.Context, in ReconcileInput) (string, error) {
	input, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	arn, err := l.Engine.StartExecution(ctx, l.ARN, reconcileExecutionName(in), input)
	if err != nil {
		return "", fmt.Errorf("start reconcile execution: %w", err)
	}
	return arn, nil
}

// SFNReconcile starts the reconcile state machine on Step Functions.
type SFNReconcile struct {
	Client SFNAPI
	ARN    string
}

// StartReconcile starts an execution for a run the caller began.
func (s SFNReconcile) StartReconcile(ctx context.Context, runID string) error {
	in := ReconcileInput{RunID: runID}
	input, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if _, err := s.Client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(s.ARN),
		Name:            aws.String(reconcileExecutionName(in)),
		Input:           aws.String(string(input)),
	}); err != nil {
		return fmt.Errorf("start reconcile execution: %w", err)
	}
	return nil
}
