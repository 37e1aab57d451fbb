package asl

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIdleTokenFunctionsLetVirtualTimeMove: a token wait of a function in
// IdleTokenFunctions does not hold a virtual clock still, so a component
// on that clock (a schedule) can answer it; unanswered, its timeout fires.
func TestIdleTokenFunctionsLetVirtualTimeMove(t *testing.T) {
	const fn = "arn:aws:lambda:us-east-1:123456789012:function:Park"
	const def = `{"StartAt":"Park","States":{"Park":{"Type":"Task","Resource":"arn:aws:states:::lambda:invoke.waitForTaskToken",
	  "Parameters":{"FunctionName":"` + fn + `","Payload":{"token.$":"$$.Task.Token"}},
	  "TimeoutSeconds":600,"ResultPath":"$.woke",
	  "Catch":[{"ErrorEquals":["States.Timeout"],"ResultPath":null,"Next":"TimedOut"}],"End":true},
	  "TimedOut":{"Type":"Pass","Result":"timed out","ResultPath":"$.woke","End":true}}}`
	for _, tc := range []struct {
		name   string
		answer bool
		took   time.Duration
		output string
	}{
		{"answered by a timer on the same clock", true, 30 * time.Second, `{"woke":{"by":"timer"}}`},
		{"unanswered: the timeout fires", false, 600 * time.Second, `{"woke":"timed out"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vc := NewVirtualClock(epoch)
			var e *Engine
			park := lambda.NewHandler(func(_ context.Context, in map[string]any) error {
				token, _ := in["token"].(string)
				if tc.answer {
					vc.AfterFunc(30*time.Second, func() { assert.NoError(t, e.SendTaskSuccess(token, []byte(`{"by":"timer"}`))) })
				}
				return nil
			})
			e = NewEngine(Options{Clock: vc, Tasks: map[string]TaskHandler{fn: park}, IdleTokenFunctions: map[string]bool{fn: true}})
			sm, err := Parse([]byte(def), nil)
			require.NoError(t, err)
			arn, err := e.CreateStateMachine("park", sm)
			require.NoError(t, err)
			x, err := e.StartExecution(context.Background(), arn, "run-1", []byte(`{}`))
			require.NoError(t, err)
			ex, err := e.Wait(ctxT(t), x)
			require.NoError(t, err, "virtual time must move past the parked task")
			require.Equal(t, StatusSucceeded, ex.Status, ex.Cause)
			assert.JSONEq(t, tc.output, ex.Output)
			assert.Equal(t, tc.took, ex.StopDate.Sub(ex.StartDate))
		})
	}
}
