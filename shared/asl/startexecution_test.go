package asl

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// childDef succeeds with {"echo": <input.v>} unless the input says fail, and
// waits an hour when told to, so a test can stop its parent meanwhile.
const childDef = `{"StartAt":"Route","States":{
 "Route":{"Type":"Choice","Choices":[
   {"Variable":"$.fail","IsPresent":true,"Next":"Boom"},
   {"Variable":"$.hang","IsPresent":true,"Next":"Hang"}],"Default":"Done"},
 "Hang":{"Type":"Wait","Seconds":3600,"Next":"Done"},
 "Boom":{"Type":"Fail","Error":"NodeFailed","Cause":"bad node"},
 "Done":{"Type":"Pass","Parameters":{"echo.$":"$.v"},"End":true}}}`

// parentDef maps over $.rows, running the child per row with resource RES;
// each iteration catches its own failure.
func parentDef(res string) string {
	return `{"StartAt":"Rows","States":{"Rows":{"Type":"Map","ItemsPath":"$.rows","MaxConcurrency":0,
 "ItemProcessor":{"ProcessorConfig":{"Mode":"INLINE"},"StartAt":"Child","States":{
  "Child":{"Type":"Task","Resource":"` + res + `","Parameters":{"StateMachineArn":"arn:aws:states:us-east-1:123456789012:stateMachine:child",
    "Name.$":"$.name","Input.$":"$"},
   "Catch":[{"ErrorEquals":["States.ALL"],"ResultPath":"$.error","Next":"Failed"}],"End":true},
  "Failed":{"Type":"Pass","End":true}}},"End":true}}}`
}

func startParent(t *testing.T, res, input string) (*Engine, string) {
	t.Helper()
	return startParentOn(t, NewEngine(Options{Clock: NewVirtualClock(epoch)}), res, input)
}

func startParentOn(t *testing.T, e *Engine, res, input string) (*Engine, string) {
	t.Helper()
	child, err := Parse([]byte(childDef), nil)
	require.NoError(t, err)
	_, err = e.CreateStateMachine("child", child)
	require.NoError(t, err)
	parent, err := Parse([]byte(parentDef(res)), nil)
	require.NoError(t, err)
	arn, err := e.CreateStateMachine("parent", parent)
	require.NoError(t, err)
	x, err := e.StartExecution(context.Background(), arn, "batch-1", []byte(input))
	require.NoError(t, err)
	return e, x
}

const twoRows = `{"rows":[{"name":"ok","v":1},{"name":"bad","v":2,"fail":true}]}`

func TestStartExecutionSync2ReturnsOutputAsJSONAndIsolatesFailures(t *testing.T) {
	e, x := startParent(t, ResStartExecutionSync2, twoRows)
	ex := wait(t, e, x)
	require.Equal(t, StatusSucceeded, ex.Status)
	var out []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ex.Output), &out))
	require.Len(t, out, 2, ex.Output)

	ok := out[0]
	assert.Equal(t, "SUCCEEDED", ok["Status"])
	assert.Equal(t, "arn:aws:states:us-east-1:123456789012:execution:child:ok", ok["ExecutionArn"])
	assert.Equal(t, map[string]any{"echo": float64(1)}, ok["Output"], ".sync:2 returns the child's output as JSON")
	assert.Equal(t, map[string]any{"name": "ok", "v": float64(1)}, ok["Input"])

	bad := out[1]["error"].(map[string]any)
	assert.Equal(t, ErrTaskFailed, bad["Error"])
	var cause map[string]any
	require.NoError(t, json.Unmarshal([]byte(bad["Cause"].(string)), &cause))
	assert.Equal(t, "FAILED", cause["Status"])
	assert.Equal(t, "NodeFailed", cause["Error"])
	assert.Equal(t, "bad node", cause["Cause"])

	child, err := e.DescribeExecution("arn:aws:states:us-east-1:123456789012:execution:child:bad")
	require.NoError(t, err)
	assert.Equal(t, StatusFailed, child.Status)
}

func TestStartExecutionSyncReturnsOutputAsText(t *testing.T) {
	e, x := startParent(t, ResStartExecutionSync, `{"rows":[{"name":"ok","v":1}]}`)
	ex := wait(t, e, x)
	require.Equal(t, StatusSucceeded, ex.Status)
	var out []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ex.Output), &out))
	assert.JSONEq(t, `{"echo":1}`, out[0]["Output"].(string), ".sync returns the child's output as a string")
	assert.JSONEq(t, `{"name":"ok","v":1}`, out[0]["Input"].(string))
}

func TestStartExecutionWithoutSyncGoesOnAtOnce(t *testing.T) {
	e, x := startParent(t, ResStartExecution, `{"rows":[{"name":"slow","v":3,"hang":true}]}`)
	ex := wait(t, e, x)
	require.Equal(t, StatusSucceeded, ex.Status)
	var out []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ex.Output), &out))
	assert.Equal(t, "arn:aws:states:us-east-1:123456789012:execution:child:slow", out[0]["ExecutionArn"])
	assert.Contains(t, out[0], "StartDate")
	assert.NotContains(t, out[0], "Status")
	child := wait(t, e, "arn:aws:states:us-east-1:123456789012:execution:child:slow")
	assert.Equal(t, StatusSucceeded, child.Status, "the child runs on by itself")
}

func TestStoppingParentStopsSyncChildren(t *testing.T) {
	// A fake clock that nobody advances keeps the children waiting.
	e, x := startParentOn(t, NewEngine(Options{Clock: newFake()}), ResStartExecutionSync2,
		`{"rows":[{"name":"h1","v":1,"hang":true},{"name":"h2","v":2,"hang":true}]}`)
	childARN := "arn:aws:states:us-east-1:123456789012:execution:child:"
	require.Eventually(t, func() bool {
		_, err1 := e.DescribeExecution(childARN + "h1")
		_, err2 := e.DescribeExecution(childARN + "h2")
		return err1 == nil && err2 == nil
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, e.StopExecution(x, "Stopped", "operator"))
	assert.Equal(t, StatusAborted, wait(t, e, x).Status)
	for _, n := range []string{"h1", "h2"} {
		assert.Equal(t, StatusAborted, wait(t, e, childARN+n).Status, n)
	}
}

func TestStartExecutionOfUnknownMachineFailsTheTask(t *testing.T) {
	e := NewEngine(Options{Clock: NewVirtualClock(epoch)})
	parent, err := Parse([]byte(parentDef(ResStartExecutionSync2)), nil)
	require.NoError(t, err)
	arn, err := e.CreateStateMachine("parent", parent)
	require.NoError(t, err)
	x, err := e.StartExecution(context.Background(), arn, "", []byte(`{"rows":[{"name":"a"}]}`))
	require.NoError(t, err)
	ex := wait(t, e, x)
	require.Equal(t, StatusSucceeded, ex.Status)
	assert.Contains(t, ex.Output, "StepFunctions.StateMachineDoesNotExistException")
}
