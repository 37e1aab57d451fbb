package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/maasflow/maasflow/shared/domain"
)

// DecommissionInput is the decommission state machine's execution input;
// the activities read everything else from the read model.
type DecommissionInput struct {
	DecommissionID string `json:"decommission_id"`
	NodeID         string `json:"node_id"`
	SiteID         string `json:"site_id"`
	Mode           string `json:"mode"`
	Attempt        int    `json:"attempt"`
	CorrelationID  string `json:"correlation_id"`
}

// DecommissionExecutionName names a decommission run's execution, so a
// repeated start cannot run it twice (see ExecutionName).
func DecommissionExecutionName(d domain.Decommission) string {
	return runName("decommission", d.ID, d.Attempt, d.Run)
}

func decommissionInput(d domain.Decommission) ([]byte, error) {
	b, err := json.Marshal(DecommissionInput{DecommissionID: d.ID, NodeID: d.NodeID, SiteID: d.SiteID, Mode: d.Mode,
		Attempt: d.Attempt, CorrelationID: d.CorrelationID})
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
	input, err := decommissionInput(d)
	if err != nil {
		return "", err
	}
	arn, err := l.engine.StartExecution(ctx, l.arn, DecommissionExecutionName(d), input)
	if err != nil {
		return "", fmt.Errorf("start decommission %s: %w", d.ID, err)
	}
	return arn, nil
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
	input, err := decommissionInput(d)
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
