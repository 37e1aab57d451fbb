package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/maasflow/maasflow/shared/domain"
	"github.com/maasflow/maasflow/shared/run"
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
		out[o.ID] = run.ExecutionARN(onboardingARN, ExecutionName(o))
	}
	return out
}

// WithBatch returns s starting batches as executions of the batch state
// machine batchARN.
func (s *Onboardings) WithBatch(batchARN string) *Onboardings {
	c := *s
	c.batchARN = batchARN
	return &c
}

// StartBatch starts one execution of the batch state machine running every
// onboarding as its child, and returns its ARN and, per onboarding id, the
// ARN its child execution gets.
func (s *Onboardings) StartBatch(ctx context.Context, batchID string, os []domain.Onboarding) (executionID string, children map[string]string, err error) {
	if s.batchARN == "" {
		return "", nil, errNoBatchMachine
	}
	input, err := batchInput(batchID, os)
	if err != nil {
		return "", nil, err
	}
	arn, err := s.starter.Engine.Start(ctx, s.batchARN, BatchExecutionName(batchID), input)
	if err != nil {
		return "", nil, fmt.Errorf("start batch %s: %w", batchID, err)
	}
	return arn, childARNs(s.starter.ARN, os), nil
}

// BatchStarterEnabled reports whether s was given a batch state machine.
func (s *Onboardings) BatchStarterEnabled() bool { return s.batchARN != "" }

var errNoBatchMachine = fmt.Errorf("no batch state machine configured")
