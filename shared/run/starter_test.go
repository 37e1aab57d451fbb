package run_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maasflow/maasflow/shared/asl"
	"github.com/maasflow/maasflow/shared/run"
)

type record struct {
	ID           string
	Attempt, Run int
}

type stage string

var widgets = run.Workflow[record, stage]{
	Kind:      "widget",
	Run:       func(r record) (string, int, int) { return r.ID, r.Attempt, r.Run },
	Input:     func(r record, start stage) any { return map[string]any{"id": r.ID, "start": start} },
	StopError: "WidgetStopped",
}

// runtime is the embedded runtime as a test double.
type runtime struct {
	arn, name, input  string
	stopErr, stopped  string
	startErr, stopRes error
}

func (r *runtime) StartExecution(_ context.Context, arn, name string, input []byte) (string, error) {
	r.arn, r.name, r.input = arn, name, string(input)
	return "exec:" + name, r.startErr
}

func (r *runtime) SendTaskSuccess(string, []byte) error { return &asl.InvalidTokenError{} }

func (r *runtime) StopExecution(arn, errName, _ string) error {
	r.stopped, r.stopErr = arn, errName
	return r.stopRes
}

func TestStarterNamesEachRunAndPassesTheStartStage(t *testing.T) {
	rt := &runtime{}
	s := run.Starter[record, stage]{Workflow: widgets, Engine: run.Local{Runtime: rt}, ARN: "arn:aws:states:r:1:stateMachine:w"}

	arn, err := s.Start(context.Background(), record{ID: "w-1", Attempt: 2})
	require.NoError(t, err)
	assert.Equal(t, "exec:widget-w-1-2", arn)
	assert.JSONEq(t, `{"id":"w-1","start":""}`, rt.input)

	_, err = s.StartAt(context.Background(), record{ID: "w-1", Attempt: 2, Run: 3}, "polish")
	require.NoError(t, err)
	assert.Equal(t, "widget-w-1-2-r3", rt.name, "a new run of the same attempt is a new execution name")
	assert.JSONEq(t, `{"id":"w-1","start":"polish"}`, rt.input)
	assert.Equal(t, "arn:aws:states:r:1:execution:w:widget-w-1-2-r3", s.ExecutionID(record{ID: "w-1", Attempt: 2, Run: 3}))

	rt.startErr = errors.New("boom")
	_, err = s.Start(context.Background(), record{ID: "w-9", Attempt: 1})
	require.EqualError(t, err, "start widget w-9: boom")
}

func TestStarterStopIsQuietForAnExecutionTheEngineForgot(t *testing.T) {
	rt := &runtime{stopRes: &asl.ExecutionDoesNotExistError{ARN: "x"}}
	s := run.Starter[record, stage]{Workflow: widgets, Engine: run.Local{Runtime: rt}, ARN: "sm"}
	require.NoError(t, s.Stop(context.Background(), "exec-1", "why"))
	assert.Equal(t, "WidgetStopped", rt.stopErr)

	rt.stopRes = errors.New("boom")
	require.EqualError(t, s.Stop(context.Background(), "exec-1", "why"), "stop widget execution exec-1: boom")

	var ended *run.TaskEndedError
	require.ErrorAs(t, run.Local{Runtime: rt}.CompleteTask(context.Background(), "tok", nil), &ended)
}
