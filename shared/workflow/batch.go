package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/maasflow/maasflow/shared/domain"
)

// BatchInput is the batch state machine's execution input: one row per
// onboarding, each naming the child execution it runs as, so the child's
// ARN is known before it starts and an operator's cancel can stop it.
type BatchInput struct {
	BatchID     string     `json:"batch_id"`
	Onboardings []BatchRow `json:"onboardings"`
}

// BatchRow is one child execution of a batch.
type BatchRow struct {
	ExecutionName string          `json:"execution_name"`
	Input         OnboardingInput `json:"input"`
}

// BatchExecutionName names a batch's execution: one per batch, so a repeated
// start cannot run the batch twice.
func BatchExecutionName(batchID string) string { return "batch-" + batchID }

func batchInput(batchID string, os []domain.Onboarding) ([]byte, error) {
	in := BatchInput{BatchID: batchID, Onboardings: make([]BatchRow, len(os))}
	for i, o := range os {
		in.Onboardings[i] = BatchRow{ExecutionName: ExecutionName(o), Input: NewOnboardingInput(o)}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("marshal batch input: %w", err)
	}
	return b, nil
}

// childARNs predicts each child's execution ARN.
func childARNs(onboardingARN string, os []domain.Onboarding) map[string]string {
	out := make(map[string]string, len(os))
	for _, o := range os {
		out[o.ID] = executionARN(onboardingARN, ExecutionName(o))
	}
	return out
}

// WithBatch returns l starting batches as executions of the batch state
// machine registered under batchARN.
func (l *Local) WithBatch(batchARN string) *Local {
	c := *l
	c.batchARN = batchARN
	return &c
}

// StartBatch starts one execution of the batch state machine running every
// onboarding as its child, and returns its ARN and, per onboarding id, the
// ARN its child execution gets.
func (l *Local) StartBatch(ctx context.Context, batchID string, os []domain.Onboarding) (executionID string, children map[string]string, err error) {
	if l.batchARN == "" {
		return "", nil, errNoBatchMachine
	}
	input, err := batchInput(batchID, os)
	if err != nil {
		return "", nil, err
	}
	arn, err := l.engine.StartExecution(ctx, l.batchARN, BatchExecutionName(batchID), input)
	if err != nil {
		return "", nil, fmt.Errorf("start batch %s: %w", batchID, err)
	}
	return arn, childARNs(l.onboardingARN, os), nil
}

// WithBatch returns s starting batches as executions of the batch state
// machine batchARN.
func (s *StepFunctions) WithBatch(batchARN string) *StepFunctions {
	c := *s
	c.batchARN = batchARN
	return &c
}

// StartBatch starts one execution of the batch state machine running every
// onboarding as its child, and returns its ARN and, per onboarding id, the
// ARN its child execution gets.
func (s *StepFunctions) StartBatch(ctx context.Context, batchID string, os []domain.Onboarding) (executionID string, children map[string]string, err error) {
	if s.batchARN == "" {
		return "", nil, errNoBatchMachine
	}
	input, err := batchInput(batchID, os)
	if err != nil {
		return "", nil, err
	}
	out, err := s.client.StartExecution(ctx, &sfn.StartExecutionInput{
		StateMachineArn: aws.String(s.batchARN),
		Name:            aws.String(BatchExecutionName(batchID)),
		Input:           aws.String(string(input)),
	})
	if err != nil {
		return "", nil, fmt.Errorf("start batch %s: %w", batchID, err)
	}
	return aws.ToString(out.ExecutionArn), childARNs(s.onboardingARN, os), nil
}

// BatchStarterEnabled reports whether s was given a batch state machine.
func (s *StepFunctions) BatchStarterEnabled() bool { return s.batchARN != "" }

// BatchStarterEnabled reports whether l was given a batch state machine.
func (l *Local) BatchStarterEnabled() bool { return l.batchARN != "" }

var errNoBatchMachine = fmt.Errorf("no batch state machine configured")
