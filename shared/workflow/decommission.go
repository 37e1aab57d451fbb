package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/domain"
)

// DecommissionInput is the decommission state machine's execution input;
// the activities read everything else from the read model. StartStage,
// when set, enters the workflow at that stage once BeginDecommission ran
// (the state machine's EnterAtStage Choice routes on it); empty starts at
// the drain.
type DecommissionInput struct {
	DecommissionID string `json:"decommission_id"`
	NodeID         string `json:"node_id"`
	SiteID         string `json:"site_id"`
	Mode           string `json:"mode"`
	Attempt        int    `json:"attempt"`
	// Run is the record's run of the attempt; the activities act only
	// while the record is on it, so a stopped run cannot write into the
	// run a recovery operation started.
	Run           int                      `json:"run"`
	CorrelationID string                   `json:"correlation_id"`
	StartStage    domain.DecommissionStage `json:"start_stage,omitempty"`
}

// DecommissionStoppedErrorName is the error a decommission execution
// stopped by an operator (cancel, mark-manual-intervention) ends with, in
// the execution history of both runtimes.
const DecommissionStoppedErrorName = "DecommissionStoppedByOperator"

// DecommissionExecutionName names a decommission run's execution, so a
// repeated start cannot run it twice (see ExecutionName).
func DecommissionExecutionName(d domain.Decommission) string {
	return runName("decommission", d.ID, d.Attempt, d.Run)
}

func decommissionInput(d domain.Decommission, start domain.DecommissionStage) ([]byte, error) {
	b, err := json.Marshal(DecommissionInput{DecommissionID: d.ID, NodeID: d.NodeID, SiteID: d.SiteID, Mode: d.Mode,
		Attempt: d.Attempt, Run: d.Run, CorrelationID: d.CorrelationID, StartStage: start})
	if err != nil {
		return nil, fmt.Errorf("marshal decommission input: %w", err)
	}
	return b, nil
}

// LocalDecommissions starts decommissions on the embedded ASL runtime.
type LocalDecommissions struct {
	engine LocalEngine
	arn    string
}

// NewLocalDecommissions returns a starter of the decommission state
// machine registered under arn.
func NewLocalDecommissions(engine LocalEngine, arn string) *LocalDecommissions {
	return &LocalDecommissions{engine: engine, arn: arn}
}

// StartDecommission starts the decommission's current attempt and returns
// the execution ARN.
func (l *LocalDecommissions) StartDecommission(ctx context.Context, d domain.Decommission) (string, error) {
	return l.StartDecommissionAt(ctx, d, "")
}

// StartDecommissionAt starts the decommission's current run at stage start
// (after BeginDecommission); an empty start is StartDecommission.
func (l *LocalDecommissions) StartDecommissionAt(ctx context.Context, d domain.Decommission, start domain.DecommissionStage) (string, error) {
	input, err := decommissionInput(d, start)
	if err != nil {
		return "", err
	}
	arn, err := l.engine.StartExecution(ctx, l.arn, DecommissionExecutionName(d), input)
	if err != nil {
		return "", fmt.Errorf("start decommission %s: %w", d.ID, err)
	}
	return arn, nil
}

// StopDecommission aborts the execution with DecommissionStoppedErrorName
// and returns once it has unwound, so no later state of it writes the
// record. An execution that already ended, or one the runtime no longer
// knows, runs nothing: neither is an error.
func (l *LocalDecommissions) StopDecommission(_ context.Context, executionID, cause string) error {
	err := l.engine.StopExecution(executionID, DecommissionStoppedErrorName, cause)
	var gone *asl.ExecutionDoesNotExistError
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("stop decommission execution %s: %w", executionID, err)
	}
	return nil
}

// StepFunctionsDecommissions starts decommissions on AWS Step Functions.
type StepFunctionsDecommissions struct {
	client SFNAPI
	arn    string
}

// NewStepFunctionsDecommissions returns a starter of the decommission
// state machine arn.
func NewStepFunctionsDecommissions(client SFNAPI, arn string) *StepFunctionsDecommissions {
	return &StepFunctionsDecommissions{client: client, arn: arn}
}

// StartDecommission starts the decommission's current attempt; a repeat
// with the same name and input answers the running execution.
func (s *StepFunctionsDecommissions) StartDecommission(ctx context.Context, d domain.Decommission) (string, error) {
	return s.StartDecommissionAt(ctx, d, "")
}

// StartDecommissionAt starts the decommission's current run at stage start
// (after BeginDecommission); an empty start is StartDecommission.
func (s *StepFunctionsDecommissions) StartDecommissionAt(ctx context.Context, d domain.Decommission, start domain.DecommissionStage) (string, error) {
	input, err := decommissionInput(d, start)
	if err != nil {
		return "", err
	}
	out, err := s.client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(s.arn),
		Name:            aws.String(DecommissionExecutionName(d)),
		Input:           aws.String(string(input)),
	})
	if err != nil {
		return "", fmt.Errorf("start decommission %s: %w", d.ID, err)
	}
	return aws.ToString(out.ExecutionArn), nil
}

// StopDecommission stops the execution with DecommissionStoppedErrorName.
// A stop of an execution that already ended succeeds and changes nothing;
// ExecutionDoesNotExist (history expired) means nothing runs either.
func (s *StepFunctionsDecommissions) StopDecommission(ctx context.Context, executionID, cause string) error {
	if len(cause) > maxStopCause {
		cause = cause[:maxStopCause]
	}
	_, err := s.client.StopExecution(ctx, &sfn.StopExecutionInput{
		ExecutionArn: aws.String(executionID),
		Error:        aws.String(DecommissionStoppedErrorName),
		Cause:        aws.String(cause),
	})
	var gone *sfntypes.ExecutionDoesNotExist
	if err != nil && !errors.As(err, &gone) {
		return fmt.Errorf("stop decommission execution %s: %w", executionID, err)
	}
	return nil
}
