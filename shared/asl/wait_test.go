package asl

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWaitKinds(t *testing.T) {
	tests := []struct {
		name  string
		wait  string
		input string
		took  time.Duration
	}{
		{"Seconds", `"Seconds":90`, `{}`, 90 * time.Second},
		{"Seconds 0", `"Seconds":0`, `{}`, 0},
		{"SecondsPath", `"SecondsPath":"$.delay"`, `{"delay":3600}`, time.Hour},
		{"Timestamp", `"Timestamp":"2024-01-02T04:04:05Z"`, `{}`, time.Hour},
		{"Timestamp in the past does not wait", `"Timestamp":"2016-03-14T01:59:00Z"`, `{}`, 0},
		{"TimestampPath with offset", `"TimestampPath":"$.at"`, `{"at":"2024-01-02T05:04:05.000+01:00"}`, time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, `{"StartAt":"W","States":{"W":{"Type":"Wait",`+tc.wait+`,"End":true}}}`, tc.input, nil)
			require.Equal(t, StatusSucceeded, r.Exec.Status, r.Exec.Cause)
			assert.JSONEq(t, tc.input, r.Exec.Output)
			assert.Equal(t, tc.took, r.Exec.StopDate.Sub(r.Exec.StartDate))
			assert.Equal(t, []string{"ExecutionStarted", "WaitStateEntered", "WaitStateExited", "ExecutionSucceeded"}, r.types())
		})
	}
}

func TestWaitInvalidValues(t *testing.T) {
	tests := []struct {
		name  string
		wait  string
		input string
		cause string
	}{
		// The causes AWS recorded for these inputs (quoted by LocalStack's
		// snapshot tests of the Wait state against AWS).
		{"timestamp without T", `"TimestampPath":"$.TimestampValue"`, `{"TimestampValue":"2016-12-05 21:29:29Z"}`,
			`The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: $.TimestampValue == 2016-12-05 21:29:29Z`},
		{"timestamp without zone", `"TimestampPath":"$.TimestampValue"`, `{"TimestampValue":"2016-12-05T21:29:29"}`,
			`The TimestampPath parameter does not reference a valid ISO-8601 extended offset date-time format string: $.TimestampValue == 2016-12-05T21:29:29`},
		{"negative seconds", `"SecondsPath":"$.input.waitSeconds"`, `{"input":{"waitSeconds":-1}}`,
			`The SecondsPath parameter references a negative value: $.input.waitSeconds == -1`},
		{"fractional seconds", `"SecondsPath":"$.input.waitSeconds"`, `{"input":{"waitSeconds":1.5}}`,
			`The SecondsPath parameter cannot be parsed as a long value: $.input.waitSeconds == 1.5`},
		{"negative fractional seconds", `"SecondsPath":"$.input.waitSeconds"`, `{"input":{"waitSeconds":-1.5}}`,
			`The SecondsPath parameter cannot be parsed as a long value: $.input.waitSeconds == -1.5`},
		{"missing path", `"SecondsPath":"$.input.waitSeconds"`, `{}`, `The SecondsPath parameter does not reference an input value: $.input.waitSeconds`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, `{"StartAt":"W","States":{"W":{"Type":"Wait",`+tc.wait+`,"End":true}}}`, tc.input, nil)
			assert.Equal(t, StatusFailed, r.Exec.Status)
			assert.Equal(t, ErrRuntime, r.Exec.Error)
			assert.Equal(t, "An error occurred while executing the state 'W' (entered at the event id #2). "+tc.cause, r.Exec.Cause)
		})
	}
}

func TestWaitOnFakeClockNeverSleeps(t *testing.T) {
	fc := newFake()
	e, x := start(t, `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":300,"End":true}}}`, `{}`, Options{Clock: fc})
	require.NoError(t, fc.BlockUntilContext(ctxT(t), 1))
	d, err := e.DescribeExecution(x)
	require.NoError(t, err)
	assert.Equal(t, StatusRunning, d.Status)
	h, err := e.History(x)
	require.NoError(t, err)
	assert.Equal(t, "WaitStateEntered", h[len(h)-1].Type, "the history is readable while the execution runs")
	fc.Advance(299 * time.Second)
	d, _ = e.DescribeExecution(x)
	assert.Equal(t, StatusRunning, d.Status)
	fc.Advance(time.Second)
	assert.Equal(t, StatusSucceeded, wait(t, e, x).Status)
}

func TestExecutionTimeout(t *testing.T) {
	r := run(t, `{"TimeoutSeconds":10,"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":100,"End":true}}}`, `{}`, nil)
	assert.Equal(t, StatusTimedOut, r.Exec.Status)
	assert.Equal(t, ErrTimeout, r.Exec.Error)
	assert.Equal(t, 10*time.Second, r.Exec.StopDate.Sub(r.Exec.StartDate))
	assert.Equal(t, []string{"ExecutionStarted", "WaitStateEntered", "WaitStateAborted", "ExecutionTimedOut"}, r.types())
}

func TestTaskTokenLifecycle(t *testing.T) {
	const def = `{"StartAt":"Enroll","States":{"Enroll":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	  "Parameters":{"FunctionName":"Notify","Payload":{"token.$":"$$.Task.Token","node.$":"$.node"}},
	  "HeartbeatSeconds":60,"TimeoutSeconds":600,"ResultPath":"$.enrolled",
	  "Catch":[{"ErrorEquals":["States.Timeout"],"ResultPath":"$.error","Next":"TimedOut"}],"End":true},
	  "TimedOut":{"Type":"Pass","End":true}}}`
	type step func(t *testing.T, e *Engine, fc interface{ Advance(time.Duration) }, token string)
	tests := []struct {
		name   string
		steps  step
		status string
		output string
		err    string
	}{
		{"success", func(t *testing.T, e *Engine, _ interface{ Advance(time.Duration) }, token string) {
			t.Helper()
			require.NoError(t, e.SendTaskSuccess(token, []byte(`{"agent":"ok"}`)))
		}, StatusSucceeded, `{"node":"n1","enrolled":{"agent":"ok"}}`, ""},
		{"failure", func(t *testing.T, e *Engine, _ interface{ Advance(time.Duration) }, token string) {
			t.Helper()
			require.NoError(t, e.SendTaskFailure(token, "EnrollmentRejected", "bad cert"))
		}, StatusFailed, "", "EnrollmentRejected"},
		{"heartbeats keep it alive until success", func(t *testing.T, e *Engine, fc interface{ Advance(time.Duration) }, token string) {
			t.Helper()
			for range 3 {
				fc.Advance(50 * time.Second)
				require.NoError(t, e.SendTaskHeartbeat(token))
			}
			require.NoError(t, e.SendTaskSuccess(token, []byte(`1`)))
		}, StatusSucceeded, `{"node":"n1","enrolled":1}`, ""},
		{"heartbeat expiry is States.Timeout", func(t *testing.T, _ *Engine, fc interface{ Advance(time.Duration) }, _ string) {
			t.Helper()
			fc.Advance(60 * time.Second)
		}, StatusSucceeded, `{"node":"n1","error":{"Error":"States.Timeout","Cause":""}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tokens := make(chan string, 1)
			notify := lambda.NewHandler(func(ctx context.Context, in map[string]any) error {
				ctxToken, _ := TaskToken(ctx)
				assert.Equal(t, in["token"], ctxToken)
				tokens <- in["token"].(string)
				return nil
			})
			fc := newFake()
			e, x := start(t, def, `{"node":"n1"}`, Options{Clock: fc, Tasks: map[string]TaskHandler{"Notify": notify}})
			token := <-tokens
			// Timeout and heartbeat timers are set once the task is waiting.
			require.NoError(t, fc.BlockUntilContext(ctxT(t), 2))
			tc.steps(t, e, fc, token)
			ex := wait(t, e, x)
			assert.Equal(t, tc.status, ex.Status)
			if tc.output != "" {
				assert.JSONEq(t, tc.output, ex.Output)
			}
			if tc.err != "" {
				assert.Equal(t, tc.err, ex.Error)
				assert.Equal(t, "bad cert", ex.Cause)
			}
			var te *TaskTimedOutError
			assert.ErrorAs(t, e.SendTaskSuccess(token, []byte(`{}`)), &te, "a closed token is refused as AWS does")
		})
	}
}

func TestTaskTokenHistoryAndErrors(t *testing.T) {
	tokens := make(chan string, 1)
	notify := lambda.NewHandler(func(ctx context.Context) (string, error) {
		tok, _ := TaskToken(ctx)
		tokens <- tok
		return "submitted", nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","Parameters":{"FunctionName":"Notify"},"End":true}}}`
	e, x := start(t, def, `{}`, Options{Clock: NewVirtualClock(epoch), Tasks: map[string]TaskHandler{"Notify": notify}})
	token := <-tokens
	var inv *InvalidTokenError
	require.ErrorAs(t, e.SendTaskSuccess("garbage", []byte(`{}`)), &inv)
	var io *InvalidOutputError
	require.ErrorAs(t, e.SendTaskSuccess(token, []byte(`{not json`)), &io)
	require.NoError(t, e.SendTaskSuccess(token, []byte(`{"done":true}`)))
	ex := wait(t, e, x)
	assert.JSONEq(t, `{"done":true}`, ex.Output)
	h, _ := e.History(x)
	var types []string
	for _, ev := range h {
		types = append(types, ev.Type)
	}
	assert.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSubmitted", "TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"}, types)
	assert.Contains(t, h[4].Details.Output, `"Payload":"submitted"`)
}

func TestSendTaskFailureWithoutErrorOrCause(t *testing.T) {
	tokens := make(chan string, 1)
	notify := lambda.NewHandler(func(ctx context.Context) error {
		tok, _ := TaskToken(ctx)
		tokens <- tok
		return nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken","Parameters":{"FunctionName":"Notify"},"End":true}}}`
	e, x := start(t, def, `{}`, Options{Clock: NewVirtualClock(epoch), Tasks: map[string]TaskHandler{"Notify": notify}})
	require.NoError(t, e.SendTaskFailure(<-tokens, "", ""))
	ex := wait(t, e, x)
	assert.Equal(t, StatusFailed, ex.Status)
	assert.Empty(t, ex.Error)
	h, _ := e.History(x)
	failed := h[len(h)-2]
	require.Equal(t, "TaskFailed", failed.Type)
	assert.Empty(t, failed.Details.Error)
	assert.Empty(t, failed.Details.Cause)
}
