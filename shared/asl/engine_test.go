package asl

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const waitDef = `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":60,"End":true}}}`

func newEngineWith(t *testing.T, def string, o Options) (*Engine, string) {
	t.Helper()
	sm, err := Parse([]byte(def), nil)
	require.NoError(t, err)
	e := NewEngine(o)
	arn, err := e.CreateStateMachine("machine", sm)
	require.NoError(t, err)
	return e, arn
}

func TestStartExecutionNames(t *testing.T) {
	fc := newFake()
	e, sm := newEngineWith(t, waitDef, Options{Clock: fc})
	ctx := context.Background()

	x, err := e.StartExecution(ctx, sm, "onb-1", []byte(`{"a":1}`))
	require.NoError(t, err)
	assert.Equal(t, "arn:aws:states:us-east-1:123456789012:execution:machine:onb-1", x)

	again, err := e.StartExecution(ctx, sm, "onb-1", []byte(`{"a":1}`))
	require.NoError(t, err, "a running execution with the same name and input is returned, as AWS does")
	assert.Equal(t, x, again)

	_, err = e.StartExecution(ctx, sm, "onb-1", []byte(`{"a":2}`))
	var exists *ExecutionAlreadyExistsError
	require.ErrorAs(t, err, &exists)
	assert.Equal(t, x, exists.ARN)

	require.NoError(t, e.StopExecution(x, "Cancelled", "operator"))
	_, err = e.StartExecution(ctx, sm, "onb-1", []byte(`{"a":1}`))
	require.ErrorAs(t, err, &exists, "an ended execution's name stays taken")

	var bad *InvalidNameError
	_, err = e.StartExecution(ctx, sm, "has space", nil)
	require.ErrorAs(t, err, &bad)
	_, err = e.StartExecution(ctx, sm, strings.Repeat("x", 81), nil)
	require.ErrorAs(t, err, &bad)

	var noSM *StateMachineDoesNotExistError
	_, err = e.StartExecution(ctx, sm+"x", "n", nil)
	require.ErrorAs(t, err, &noSM)

	var badIn *InvalidExecutionInputError
	_, err = e.StartExecution(ctx, sm, "n2", []byte(`{nope`))
	require.ErrorAs(t, err, &badIn)
	_, err = e.StartExecution(ctx, sm, "n3", []byte(`"`+strings.Repeat("x", MaxPayloadBytes)+`"`))
	require.ErrorAs(t, err, &badIn)

	gen, err := e.StartExecution(ctx, sm, "", nil)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(gen, "arn:aws:states:us-east-1:123456789012:execution:machine:"))
	require.NoError(t, e.StopExecution(gen, "", ""))
}

func TestStopDescribeListAndHistory(t *testing.T) {
	fc := newFake()
	e, sm := newEngineWith(t, waitDef, Options{Clock: fc})
	ctx := context.Background()
	a, err := e.StartExecution(ctx, sm, "a", nil)
	require.NoError(t, err)
	fc.Advance(time.Second)
	b, err := e.StartExecution(ctx, sm, "b", nil)
	require.NoError(t, err)
	require.NoError(t, fc.BlockUntilContext(ctxT(t), 2))

	d, err := e.DescribeExecution(a)
	require.NoError(t, err)
	assert.Equal(t, StatusRunning, d.Status)
	assert.Equal(t, "{}", d.Input)
	assert.True(t, d.StopDate.IsZero())

	require.NoError(t, e.StopExecution(a, "Operator.Cancel", "asked to stop"))
	d, _ = e.DescribeExecution(a)
	assert.Equal(t, StatusAborted, d.Status)
	assert.Equal(t, "Operator.Cancel", d.Error)
	assert.Equal(t, "asked to stop", d.Cause)
	require.NoError(t, e.StopExecution(a, "", ""), "stopping an ended execution does nothing")

	h, err := e.History(a)
	require.NoError(t, err)
	var types []string
	for _, ev := range h {
		types = append(types, ev.Type)
	}
	assert.Equal(t, []string{"ExecutionStarted", "WaitStateEntered", "WaitStateAborted", "ExecutionAborted"}, types)
	assert.Equal(t, "asked to stop", h[3].Details.Cause)
	for i, ev := range h {
		assert.Equal(t, int64(i+1), ev.ID)
	}
	assert.Equal(t, int64(0), h[1].PreviousEventID, "AWS records the first state's previous event id as 0")
	assert.Equal(t, int64(2), h[2].PreviousEventID)

	fc.Advance(time.Minute)
	assert.Equal(t, StatusSucceeded, wait(t, e, b).Status)

	all := e.ListExecutions(sm, "")
	require.Len(t, all, 2)
	assert.Equal(t, "b", all[0].Name, "newest first")
	aborted := e.ListExecutions(sm, StatusAborted)
	require.Len(t, aborted, 1)
	assert.Equal(t, "a", aborted[0].Name)

	var missing *ExecutionDoesNotExistError
	_, err = e.DescribeExecution(a + "zz")
	require.ErrorAs(t, err, &missing)
	_, err = e.History(a + "zz")
	require.ErrorAs(t, err, &missing)
	assert.ErrorAs(t, e.StopExecution(a+"zz", "", ""), &missing)
}

func TestCreateStateMachine(t *testing.T) {
	e := NewEngine(Options{})
	sm1, err := Parse([]byte(waitDef), nil)
	require.NoError(t, err)
	sm2, err := Parse([]byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`), nil)
	require.NoError(t, err)
	arn, err := e.CreateStateMachine("m", sm1)
	require.NoError(t, err)
	again, err := e.CreateStateMachine("m", sm1)
	require.NoError(t, err)
	assert.Equal(t, arn, again)
	var exists *StateMachineAlreadyExistsError
	_, err = e.CreateStateMachine("m", sm2)
	require.ErrorAs(t, err, &exists)
	require.NoError(t, e.UpdateStateMachine(arn, sm2))
	var bad *InvalidNameError
	_, err = e.CreateStateMachine("bad name", sm1)
	assert.ErrorAs(t, err, &bad)
}

func TestManyConcurrentExecutions(t *testing.T) {
	vc := NewVirtualClock(epoch)
	e, sm := newEngineWith(t, `{"StartAt":"W","States":{"W":{"Type":"Wait","SecondsPath":"$.s","Next":"P"},"P":{"Type":"Pass","Result":"done","End":true}}}`, Options{Clock: vc})
	var arns []string
	vc.Busy() // hold time still until every execution has started
	for i := range 200 {
		x, err := e.StartExecution(context.Background(), sm, "", []byte(`{"s":`+strconv.Itoa(i%7)+`}`))
		require.NoError(t, err)
		arns = append(arns, x)
	}
	vc.Idle()
	for _, x := range arns {
		ex := wait(t, e, x)
		assert.Equal(t, StatusSucceeded, ex.Status)
	}
	assert.Equal(t, epoch.Add(6*time.Second), vc.Now())
}

func TestDataLimitExceeded(t *testing.T) {
	big := strings.Repeat("x", MaxPayloadBytes)
	bigTask := handlerFunc(func(context.Context, []byte) ([]byte, error) { return []byte(`"` + big + `"`), nil })
	tests := []struct {
		name   string
		def    string
		status string
		err    string
	}{
		{"an oversized Task result is caught by name", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:Big","Catch":[{"ErrorEquals":["States.DataLimitExceeded"],"Next":"P"}],"End":true},"P":{"Type":"Pass","End":true}}}`, StatusSucceeded, ""},
		{"an oversized Task result is caught by States.ALL", `{"StartAt":"T","States":{"T":{"Type":"Task","Resource":"arn:aws:lambda:us-east-1:123456789012:function:Big","Catch":[{"ErrorEquals":["States.ALL"],"Next":"P"}],"End":true},"P":{"Type":"Pass","End":true}}}`, StatusSucceeded, ""},
		{"an oversized Pass output fails the run", `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":"` + big + `","End":true}}}`, StatusFailed, ErrDataLimitExceeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.def, `{}`, map[string]TaskHandler{"Big": bigTask})
			assert.Equal(t, tc.status, r.Exec.Status)
			assert.Equal(t, tc.err, r.Exec.Error)
			if tc.status == StatusSucceeded {
				assert.Contains(t, r.Exec.Output, ErrDataLimitExceeded)
			}
		})
	}
}

func TestHistoryLimit(t *testing.T) {
	// A Choice loop that never ends: AWS fails it at event 25,000 with
	// States.Runtime, the failure being the 25,000th event.
	def := `{"StartAt":"Loop","States":{"Loop":{"Type":"Choice","Choices":[{"Variable":"$.spin","BooleanEquals":true,"Next":"Loop"}],"Default":"End"},"End":{"Type":"Succeed"}}}`
	r := run(t, def, `{"spin":true}`, nil)
	assert.Equal(t, StatusFailed, r.Exec.Status)
	assert.Equal(t, ErrRuntime, r.Exec.Error)
	assert.Equal(t, "The execution reached the maximum number of history events (25000).", r.Exec.Cause)
	require.Len(t, r.History, 25000)
	last := r.History[24999]
	assert.Equal(t, "ExecutionFailed", last.Type)
	assert.Equal(t, int64(25000), last.ID)
	assert.Equal(t, int64(24999), last.PreviousEventID)
	assert.Equal(t, "ChoiceStateExited", r.History[24998].Type)
}
