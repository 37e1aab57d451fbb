package workflow

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/maasflow/maasflow/shared/asl"
)

// ExecutionUnknown is the status of an execution the runtime does not know
// (the embedded runtime forgets executions on restart, Step Functions after
// its retention period).
const ExecutionUnknown = "UNKNOWN"

// LocalDescriber is the part of the embedded ASL runtime LocalStatus calls.
type LocalDescriber interface {
	DescribeExecution(executionARN string) (asl.Execution, error)
}

// LocalStatus reads execution statuses from the embedded runtime.
type LocalStatus struct{ Engine LocalDescriber }

// ExecutionStatus returns RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED or
// ExecutionUnknown.
func (l LocalStatus) ExecutionStatus(_ context.Context, executionID string) (string, error) {
	ex, err := l.Engine.DescribeExecution(executionID)
	var gone *asl.ExecutionDoesNotExistError
	switch {
	case errors.As(err, &gone):
		return ExecutionUnknown, nil
	case err != nil:
		return "", fmt.Errorf("describe execution: %w", err)
	}
	return string(ex.Status), nil
}

// SFNDescribeAPI is the part of the Step Functions client SFNStatus calls.
type SFNDescribeAPI interface {
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func(*sfn.Options)) (*sfn.DescribeExecutionOutput, error)
}

// SFNStatus reads execution statuses from Step Functions.
type SFNStatus struct{ Client SFNDescribeAPI }

// ExecutionStatus returns the execution's status, or ExecutionUnknown when
// Step Functions has no such execution.
func (s SFNStatus) ExecutionStatus(ctx context.Context, executionID string) (string, error) {
	out, err := s.Client.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(executionID)})
	var gone *sfntypes.ExecutionDoesNotExist
	switch {
	case errors.As(err, &gone):
		return ExecutionUnknown, nil
	case err != nil:
		return "", fmt.Errorf("describe execution: %w", err)
	}
	return string(out.Status), nil
}
