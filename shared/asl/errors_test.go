package asl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type DeployFailedError struct{ SystemID string }

func (e *DeployFailedError) Error() string { return "deploy failed on " + e.SystemID }

type ValueError struct{}

func (ValueError) Error() string { return "value error" }

// scripted returns a Lambda handler (through aws-lambda-go's wrapper) that
// fails with errs in order, then succeeds with out; calls counts them.
func scripted(out any, errs ...error) (lambda.Handler, *int) {
	var mu sync.Mutex
	calls := 0
	h := lambda.NewHandler(func(_ context.Context, _ map[string]any) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= len(errs) {
			return nil, errs[calls-1]
		}
		return out, nil
	})
	return h, &calls
}

const fnARN = "arn:aws:lambda:us-east-1:123456789012:function:Worker"

func TestLambdaErrorNamesReachRetryAndCatch(t *testing.T) {
	tests := []struct {
		name      string
		handler   any
		wantError string
		wantCause string
	}{
		{"errors.New is errorString", func() error { return errors.New("boom") }, "errorString", `{"errorMessage":"boom","errorType":"errorString"}`},
		{"typed pointer error keeps its name", func() error { return &DeployFailedError{SystemID: "abc"} }, "DeployFailedError", `{"errorMessage":"deploy failed on abc","errorType":"DeployFailedError"}`},
		{"value error keeps its name", func() error { return ValueError{} }, "ValueError", `{"errorMessage":"value error","errorType":"ValueError"}`},
		{"wrapping loses the name", func() error { return fmt.Errorf("ctx: %w", &DeployFailedError{SystemID: "x"}) }, "wrapError", `{"errorMessage":"ctx: deploy failed on x","errorType":"wrapError"}`},
		{"errors.Join is joinError", func() error { return errors.Join(errors.New("a"), errors.New("b")) }, "joinError", `{"errorMessage":"a\nb","errorType":"joinError"}`},
		{"InvokeResponse_Error value is verbatim", func() error {
			return messages.InvokeResponse_Error{Type: "MAAS.DeployTimeout", Message: "took too long"}
		}, "MAAS.DeployTimeout", `{"errorMessage":"took too long","errorType":"MAAS.DeployTimeout"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fnARN + `","Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"Done"}],"End":true},"Done":{"Type":"Pass","End":true}}}`
			r := run(t, def, `{"in":1}`, map[string]TaskHandler{"Worker": lambda.NewHandler(tc.handler)})
			require.Equal(t, StatusSucceeded, r.Exec.Status)
			assert.JSONEq(t, fmt.Sprintf(`{"in":1,"error":{"Error":%q,"Cause":%q}}`, tc.wantError, tc.wantCause), r.Exec.Output)
		})
	}
}

func TestHandlerPanicSurfacesAsLambdaReportsIt(t *testing.T) {
	h := lambda.NewHandler(func() error { panic("kaboom") })
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fnARN + `","End":true}}}`
	r := run(t, def, `{}`, map[string]TaskHandler{"Worker": h})
	require.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, "string", r.Exec.Error, "the Go runtime names a panic after the panic value's type")
	var cause map[string]any
	require.NoError(t, jsonUnmarshal(r.Exec.Cause, &cause))
	assert.Equal(t, "kaboom", cause["errorMessage"])
	assert.Equal(t, "string", cause["errorType"])
	assert.NotEmpty(t, cause["stackTrace"])
}

func TestDG22ComplexRetryScenario(t *testing.T) {
	// ErrorA, ErrorB, ErrorC, ErrorB, ErrorB with retriers [A,B max 2
	// interval 1 backoff 2] and [C interval 5]: waits 1, 2, 5, 4, then Catch.
	h, calls := scripted("never", named("ErrorA"), named("ErrorB"), named("ErrorC"), named("ErrorB"), named("ErrorB"))
	def := `{"StartAt":"X","States":{
	  "X":{"Type":"Task","Resource":"` + fnARN + `","Next":"Y",
	    "Retry":[{"ErrorEquals":["ErrorA","ErrorB"],"IntervalSeconds":1,"BackoffRate":2.0,"MaxAttempts":2},
	             {"ErrorEquals":["ErrorC"],"IntervalSeconds":5}],
	    "Catch":[{"ErrorEquals":["States.ALL"],"Next":"Z"}]},
	  "Y":{"Type":"Pass","End":true},
	  "Z":{"Type":"Pass","End":true}}}`
	r := run(t, def, `{}`, map[string]TaskHandler{"Worker": h})
	require.Equal(t, StatusSucceeded, r.Exec.Status)
	assert.Equal(t, 5, *calls)
	var starts []time.Time
	for _, ev := range r.History {
		if ev.Type == "LambdaFunctionScheduled" {
			starts = append(starts, ev.Timestamp)
		}
	}
	require.Len(t, starts, 5)
	var waits []time.Duration
	for i := 1; i < len(starts); i++ {
		waits = append(waits, starts[i].Sub(starts[i-1]))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 4 * time.Second}, waits)
	assert.Equal(t, "PassStateEntered", r.History[len(r.History)-3].Type)
	assert.Equal(t, "Z", r.History[len(r.History)-3].Details.Name)
	assert.JSONEq(t, `{"Error":"ErrorB","Cause":"{\"errorMessage\":\"failed\",\"errorType\":\"ErrorB\"}"}`, r.Exec.Output)
}

// named reports a chosen errorType through the InvokeResponse_Error escape
// hatch, as a Go Lambda can.
func named(name string) error { return messages.InvokeResponse_Error{Type: name, Message: "failed"} }

func TestRetryFields(t *testing.T) {
	tests := []struct {
		name    string
		retrier string
		errs    int
		want    []time.Duration
		status  string
	}{
		{"MaxAttempts 0 never retries", `{"ErrorEquals":["States.ALL"],"MaxAttempts":0}`, 1, nil, StatusFailed},
		{"defaults: interval 1, backoff 2, 3 attempts", `{"ErrorEquals":["States.ALL"]}`, 3, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, StatusSucceeded},
		{"MaxDelaySeconds caps each wait", `{"ErrorEquals":["States.ALL"],"IntervalSeconds":3,"BackoffRate":3,"MaxAttempts":4,"MaxDelaySeconds":10}`, 4, []time.Duration{3 * time.Second, 9 * time.Second, 10 * time.Second, 10 * time.Second}, StatusSucceeded},
		{"the doc's 3 and 4.5 seconds", `{"ErrorEquals":["States.ALL"],"IntervalSeconds":3,"MaxAttempts":2,"BackoffRate":1.5}`, 2, []time.Duration{3 * time.Second, 4500 * time.Millisecond}, StatusSucceeded},
		{"exhausted retrier fails the state", `{"ErrorEquals":["States.ALL"],"MaxAttempts":1}`, 2, []time.Duration{time.Second}, StatusFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := make([]error, tc.errs)
			for i := range errs {
				errs[i] = &DeployFailedError{}
			}
			h, _ := scripted("ok", errs...)
			def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fnARN + `","Retry":[` + tc.retrier + `],"End":true}}}`
			r := run(t, def, `{}`, map[string]TaskHandler{"Worker": h})
			assert.Equal(t, tc.status, r.Exec.Status)
			var starts []time.Time
			for _, ev := range r.History {
				if ev.Type == "LambdaFunctionScheduled" {
					starts = append(starts, ev.Timestamp)
				}
			}
			var waits []time.Duration
			for i := 1; i < len(starts); i++ {
				waits = append(waits, starts[i].Sub(starts[i-1]))
			}
			assert.Equal(t, tc.want, waits)
		})
	}
}

// halfEntropy makes every random draw 0x8080… ≈ 0.502.
type halfEntropy struct{}

func (halfEntropy) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0x80
	}
	return len(p), nil
}

func TestJitterFullDrawsBelowTheInterval(t *testing.T) {
	h, _ := scripted("ok", &DeployFailedError{}, &DeployFailedError{})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fnARN + `","Retry":[{"ErrorEquals":["States.ALL"],"IntervalSeconds":10,"JitterStrategy":"FULL"}],"End":true}}}`
	r := runOpts(t, def, `{}`, Options{Tasks: map[string]TaskHandler{"Worker": h}, Entropy: halfEntropy{}})
	require.Equal(t, StatusSucceeded, r.Exec.Status)
	// Without jitter the waits would be 10 s and 20 s; FULL scales each by
	// the draw.
	total := r.Exec.StopDate.Sub(r.Exec.StartDate)
	assert.InDelta(t, 15.06, total.Seconds(), 0.01)
}

func TestReservedErrorMatching(t *testing.T) {
	tests := []struct {
		name        string
		errorEquals string
		raised      string
		caught      bool
	}{
		{"States.ALL catches a custom error", `["States.ALL"]`, "Custom", true},
		{"States.ALL catches States.Timeout", `["States.ALL"]`, "States.Timeout", true},
		{"States.ALL catches DataLimitExceeded (recorded)", `["States.ALL"]`, "States.DataLimitExceeded", true},
		{"States.ALL never catches States.Runtime", `["States.ALL"]`, "States.Runtime", false},
		{"States.Runtime is not caught even by name", `["States.Runtime"]`, "States.Runtime", false},
		{"States.TaskFailed catches a custom error", `["States.TaskFailed"]`, "Custom", true},
		{"States.TaskFailed does not catch States.Timeout", `["States.TaskFailed"]`, "States.Timeout", false},
		{"exact name", `["Custom"]`, "Custom", true},
		{"names are case-sensitive", `["custom"]`, "Custom", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var list []string
			require.NoError(t, jsonUnmarshal(tc.errorEquals, &list))
			assert.Equal(t, tc.caught, matchesError(list, tc.raised))
		})
	}
}

func TestCatchResultPathAndOrder(t *testing.T) {
	h, _ := scripted(nil, &DeployFailedError{SystemID: "n1"})
	def := `{"StartAt":"T","States":{
	  "T":{"Type":"Task","Resource":"` + fnARN + `","End":true,
	    "Catch":[{"ErrorEquals":["Other"],"Next":"Wrong"},
	             {"ErrorEquals":["DeployFailedError"],"ResultPath":"$.error-info","Next":"Recovery"},
	             {"ErrorEquals":["States.ALL"],"Next":"Wrong"}]},
	  "Recovery":{"Type":"Pass","End":true},
	  "Wrong":{"Type":"Fail","Error":"Wrong"}}}`
	r := run(t, def, `{"foo":"bar"}`, map[string]TaskHandler{"Worker": h})
	require.Equal(t, StatusSucceeded, r.Exec.Status)
	assert.JSONEq(t, `{"foo":"bar","error-info":{"Error":"DeployFailedError","Cause":"{\"errorMessage\":\"deploy failed on n1\",\"errorType\":\"DeployFailedError\"}"}}`, r.Exec.Output)
	assert.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionFailed", "TaskStateExited", "PassStateEntered", "PassStateExited", "ExecutionSucceeded"}, r.types())
}

func TestCatchResultPathNullKeepsInput(t *testing.T) {
	h, _ := scripted(nil, &DeployFailedError{})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fnARN + `","End":true,"Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":null,"Next":"P"}]},"P":{"Type":"Pass","End":true}}}`
	r := run(t, def, `{"keep":true}`, map[string]TaskHandler{"Worker": h})
	assert.JSONEq(t, `{"keep":true}`, r.Exec.Output)
}

func TestUnknownLambdaIsResourceNotFound(t *testing.T) {
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:Missing","Catch":[{"ErrorEquals":["Lambda.ResourceNotFoundException"],"Next":"P"}],"End":true},"P":{"Type":"Pass","End":true}}}`
	r := run(t, def, `{}`, nil)
	require.Equal(t, StatusSucceeded, r.Exec.Status)
	var out map[string]string
	require.NoError(t, jsonUnmarshal(r.Exec.Output, &out))
	assert.Equal(t, "Lambda.ResourceNotFoundException", out["Error"])
	assert.Contains(t, out["Cause"], "Function not found: arn:aws:lambda:us-east-1:123456789012:function:Missing (Service: AWSLambda; Status Code: 404;")
}

func TestUnknownNonLambdaResourceIsRuntime(t *testing.T) {
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage","Catch":[{"ErrorEquals":["States.ALL"],"Next":"P"}],"End":true},"P":{"Type":"Pass","End":true}}}`
	r := run(t, def, `{}`, nil)
	assert.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, ErrRuntime, r.Exec.Error)
}

func TestOptimizedLambdaInvokeWrapsOutput(t *testing.T) {
	var got map[string]any
	h := lambda.NewHandler(func(in map[string]any) (map[string]any, error) {
		got = in
		return map[string]any{"greeting": "hello " + in["who"].(string)}, nil
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke",
	  "Parameters":{"FunctionName":"${Fn}","Payload":{"who.$":"$.name"}},"End":true}}}`
	sm, err := Parse([]byte(def), map[string]string{"Fn": "arn:aws:lambda:us-east-1:123456789012:function:Greeter:$LATEST"})
	require.NoError(t, err)
	e := NewEngine(Options{Clock: NewVirtualClock(epoch), Tasks: map[string]TaskHandler{"Greeter": h}})
	arn, err := e.CreateStateMachine("m", sm)
	require.NoError(t, err)
	x, err := e.StartExecution(context.Background(), arn, "", []byte(`{"name":"maas"}`))
	require.NoError(t, err)
	ex, err := e.Wait(context.Background(), x)
	require.NoError(t, err)
	require.Equal(t, StatusSucceeded, ex.Status, ex.Cause)
	assert.Equal(t, map[string]any{"who": "maas"}, got)
	var out map[string]any
	require.NoError(t, jsonUnmarshal(ex.Output, &out))
	assert.Equal(t, map[string]any{"greeting": "hello maas"}, out["Payload"])
	assert.EqualValues(t, 200, out["StatusCode"])
	assert.Equal(t, "$LATEST", out["ExecutedVersion"])
	assert.Contains(t, out, "SdkHttpMetadata")
	assert.Contains(t, out, "SdkResponseMetadata")
	h2, err := e.History(x)
	require.NoError(t, err)
	var types []string
	for _, ev := range h2 {
		types = append(types, ev.Type)
	}
	assert.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded", "TaskStateExited", "ExecutionSucceeded"}, types)
	assert.Equal(t, "lambda", h2[2].Details.ResourceType)
	assert.Equal(t, "invoke", h2[2].Details.Resource)
	assert.JSONEq(t, `{"FunctionName":"arn:aws:lambda:us-east-1:123456789012:function:Greeter:$LATEST","Payload":{"who":"maas"}}`, h2[2].Details.Parameters)
}

func TestFailStateWithoutErrorOrCause(t *testing.T) {
	r := run(t, `{"StartAt":"F","States":{"F":{"Type":"Fail"}}}`, `{}`, nil)
	assert.Equal(t, StatusFailed, r.Exec.Status)
	assert.Empty(t, r.Exec.Error)
	assert.Empty(t, r.Exec.Cause)
	b, err := json.Marshal(r.History[len(r.History)-1])
	require.NoError(t, err)
	assert.Contains(t, string(b), `"type":"ExecutionFailed","executionFailedEventDetails":{}`)
}

func TestStopAbortsARunningTask(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan struct{})
	h := lambda.NewHandler(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return ctx.Err()
	})
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fnARN + `","End":true}}}`
	e, x := start(t, def, `{}`, Options{Clock: NewVirtualClock(epoch), Tasks: map[string]TaskHandler{"Worker": h}})
	<-started
	require.NoError(t, e.StopExecution(x, "Stopped", "by test"))
	<-cancelled
	ex := wait(t, e, x)
	assert.Equal(t, StatusAborted, ex.Status)
	h2, _ := e.History(x)
	var types []string
	for _, ev := range h2 {
		types = append(types, ev.Type)
	}
	assert.Equal(t, []string{"ExecutionStarted", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted", "TaskStateAborted", "ExecutionAborted"}, types)
}

func TestTaskTimeoutIsStatesTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := lambda.NewHandler(func(ctx context.Context) error {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return nil
	})
	// The handler blocks, so virtual time holds; a fake clock drives the
	// timeout instead.
	fc := newFake()
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"` + fnARN + `","TimeoutSeconds":2,
	  "Catch":[{"ErrorEquals":["States.TaskFailed"],"Next":"Wrong"},{"ErrorEquals":["States.Timeout"],"Next":"P"}],"End":true},
	  "P":{"Type":"Pass","End":true},"Wrong":{"Type":"Fail"}}}`
	e, x := start(t, def, `{}`, Options{Clock: fc, Tasks: map[string]TaskHandler{"Worker": h}})
	require.NoError(t, fc.BlockUntilContext(ctxT(t), 1))
	fc.Advance(2 * time.Second)
	ex := wait(t, e, x)
	require.Equal(t, StatusSucceeded, ex.Status)
	assert.JSONEq(t, `{"Error":"States.Timeout","Cause":""}`, ex.Output)
	h2, _ := e.History(x)
	var timedOut *HistoryEvent
	for i := range h2 {
		if h2[i].Type == "LambdaFunctionTimedOut" {
			timedOut = &h2[i]
		}
	}
	require.NotNil(t, timedOut)
	assert.Equal(t, ErrTimeout, timedOut.Details.Error)
	assert.Empty(t, timedOut.Details.Cause)
}
